// Threads: naming the calling thread.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Names the calling thread (at most 15 bytes are kept), as debuggers and `top -H` show it.
void ik_thread_set_name(const char *_Nonnull name);

#ifdef __cplusplus
}
#endif
