// The status every shim returns, and the free for memory a shim hands out.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    IK_OK = 0,
    /// The library rejected the data (corrupt, unsupported, CRC mismatch ...).
    IK_ERR_DECODE = 1,
    /// The input ended before the image did.
    IK_ERR_TRUNCATED = 2,
    /// The allocation callback refused the dimensions (limits) or could not allocate.
    IK_ERR_REFUSED = 3,
    /// Out of memory or another failure that is not the data's fault.
    IK_ERR_INTERNAL = 4,
    /// This path does not handle the data; decode it with the general one (libpng).
    IK_ERR_UNSUPPORTED = 5,
} ik_status;

/// Frees memory a shim allocated and handed to Swift (an encoder's output).
void ik_free(void *_Nullable pointer);

#ifdef __cplusplus
}
#endif
