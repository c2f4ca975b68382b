// PNG: libpng's setjmp-guarded calls, the one-shot fast path, the push reader and the writer.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "ik_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// What a PNG's IHDR says, filled before the allocation callback runs.
typedef struct {
    uint32_t width;
    uint32_t height;
    int bit_depth;
    int color_type;
    int interlaced;
    /// 1 when the decoded pixels can hold alpha < 255 (alpha channel or tRNS).
    int has_alpha;
    /// Bytes the decoder needs besides the output (the fast path's inflated stream); 0 for libpng.
    size_t working_bytes;
} ik_png_info;

/// Asked once, after the header is read, for the memory to decode RGBA8 rows into. Returns the
/// first row and sets `*stride` (>= width * 4), or NULL to refuse (limits, out of memory).
typedef void *_Nullable (*ik_png_alloc_fn)(void *_Nullable context, const ik_png_info *_Nonnull info,
                                           size_t *_Nonnull stride);

/// Decodes a whole PNG (the default image) to RGBA8, straight alpha: palette and gray expanded,
/// tRNS to alpha, 16-bit reduced to its high byte, interlacing resolved, gamma untouched.
/// Reads through IEND so that a file cut after its pixels is still reported as truncated.
/// `ignore_crc` accepts CRC mismatches (for streams ImageKit assembled itself).
ik_status ik_png_decode_rgba(const void *_Nonnull data, size_t size, int ignore_crc,
                             ik_png_alloc_fn _Nonnull alloc, void *_Nullable context,
                             ik_png_info *_Nonnull info, char *_Nonnull message, size_t message_size);

/// As `ik_png_decode_rgba`, keeping 16 bits a sample (8-bit images widened): RGBA16 in native
/// byte order, `alloc`'s stride >= width * 8. For HDR PNGs, whose depth the tone mapper needs.
ik_status ik_png_decode_rgba16(const void *_Nonnull data, size_t size, ik_png_alloc_fn _Nonnull alloc,
                               void *_Nullable context, ik_png_info *_Nonnull info, char *_Nonnull message,
                               size_t message_size);

/// The one-shot fast path (ik_png_fast.c): chunks CRC-checked (critical ones and tRNS, unless
/// `check_crc` is 0), the IDAT stream inflated in one call by libdeflate, rows unfiltered with
/// SSE2 and expanded with the same transforms as `ik_png_decode_rgba`, byte for byte. Returns
/// IK_ERR_UNSUPPORTED for anything it leaves to libpng (any chunk or stream libpng treats
/// specially: damage, CRC mismatch, chunks out of place, APNG), possibly after `alloc` ran; the
/// caller then decodes with `ik_png_decode_rgba`. `info->working_bytes` is set before `alloc`.
ik_status ik_png_fast_decode(const void *_Nonnull data, size_t size, int check_crc, ik_png_alloc_fn _Nonnull alloc,
                             void *_Nullable context, ik_png_info *_Nonnull info, char *_Nonnull message,
                             size_t message_size);

/// CRC-32 (PNG, zlib) of `size` bytes, continuing from `crc` (0 to start), by libdeflate.
uint32_t ik_crc32(uint32_t crc, const void *_Nonnull data, size_t size);

/// Called once per decoded row, top to bottom, with `width * 4` bytes of RGBA8 (straight alpha).
typedef void (*ik_png_row_fn)(void *_Nullable context, const unsigned char *_Nonnull row, uint32_t y);
/// Called after the header: return 0 to go on, anything else to stop (limits, out of memory).
typedef int (*ik_png_header_fn)(void *_Nullable context, const ik_png_info *_Nonnull info);

/// Decodes a non-interlaced PNG one row at a time, handing each row to `row` (the same
/// transforms as `ik_png_decode_rgba`). Only one row is held, so a caller can shrink the image
/// while it is read. Interlaced images give IK_ERR_DECODE with the message "interlaced".
ik_status ik_png_decode_rows(const void *_Nonnull data, size_t size, ik_png_header_fn _Nonnull header,
                             ik_png_row_fn _Nonnull row, void *_Nullable context, ik_png_info *_Nonnull info,
                             char *_Nonnull message, size_t message_size);

/// Incremental PNG decoding with libpng's progressive reader (`png_process_data`).
typedef struct ik_png_progressive ik_png_progressive;

/// Asked once the header is known for a zero-filled RGBA8 buffer of width × height (stride in
/// `*stride`), into which rows are combined as they arrive; NULL refuses.
typedef void *_Nullable (*ik_png_progressive_alloc_fn)(void *_Nullable context, const ik_png_info *_Nonnull info,
                                                       size_t *_Nonnull stride);

ik_png_progressive *_Nullable ik_png_progressive_new(ik_png_progressive_alloc_fn _Nonnull alloc, void *_Nullable context);
/// Feeds the next bytes. IK_OK means "fine so far" (more may be needed).
ik_status ik_png_progressive_feed(ik_png_progressive *_Nonnull decoder, const void *_Nonnull data, size_t size,
                                  char *_Nonnull message, size_t message_size);
/// Progress: the current Adam7 pass (0 for non-interlaced images), the rows finished in that
/// pass (the highest row number seen + 1), passes completed, and whether the image is complete.
void ik_png_progressive_progress(const ik_png_progressive *_Nonnull decoder, int *_Nonnull pass,
                                 uint32_t *_Nonnull rows, int *_Nonnull passes_done, int *_Nonnull finished);
const ik_png_info *_Nonnull ik_png_progressive_info(const ik_png_progressive *_Nonnull decoder);
void ik_png_progressive_free(ik_png_progressive *_Nullable decoder);

/// Encodes RGBA8 rows (straight alpha) as an 8-bit PNG, RGBA when `keep_alpha`, else RGB
/// (ik_png_encode_fast.c): each row filtered as libpng's heuristic chooses, the rows compressed in
/// one libdeflate call at `level` (0...12; 1...9 compare with zlib's levels). The result is
/// malloc'ed; free it with `ik_free`.
ik_status ik_png_fast_encode(const void *_Nonnull pixels, uint32_t width, uint32_t height, size_t stride,
                             int keep_alpha, int level, void *_Nullable *_Nonnull out_data, size_t *_Nonnull out_size);

#ifdef __cplusplus
}
#endif
