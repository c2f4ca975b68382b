// GIF: ImageKit's LZW decoder and frame drawer, beside giflib's record reader.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "ik_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    IK_GIF_LZW_OK = 0,
    /// The data ends inside the frame's image data.
    IK_GIF_LZW_TRUNCATED = 1,
    /// Every pixel is decoded, but the data ends before the frame's block terminator.
    IK_GIF_LZW_TRAILING_TRUNCATED = 2,
    /// An end code before the last pixel.
    IK_GIF_LZW_EARLY_END = 3,
    /// A block terminator before the last pixel.
    IK_GIF_LZW_SHORT_DATA = 4,
    /// A code that cannot be decoded.
    IK_GIF_LZW_BAD_CODE = 5,
    /// A minimum code size outside 1-11.
    IK_GIF_LZW_BAD_CODE_SIZE = 6,
} ik_gif_lzw_status;

/// Bytes `ik_gif_lzw_decode` needs past a frame's last index: the longest string plus a word of
/// overrun, and a table of the 256 byte values that literal codes copy from.
#define IK_GIF_LZW_SLACK 4384

/// Decodes one frame's LZW image data into palette indices. `offset` is the frame's minimum code
/// size byte (the sub-blocks follow it); `output` holds `pixel_count` indices plus
/// `IK_GIF_LZW_SLACK` bytes, whose contents afterwards are undefined. `decoded` is how many indices were written (all of them unless the data is cut or
/// defective); `end` where the next record starts (after the block terminator), when the status
/// is OK, TRAILING_TRUNCATED, EARLY_END or SHORT_DATA, and never past `size`. `strict` 0 decodes as giflib does, 1 as
/// browsers do (ik_gif.c says how they differ).
ik_gif_lzw_status ik_gif_lzw_decode(const uint8_t *_Nonnull data, size_t size, size_t offset, int strict,
                                     uint8_t *_Nonnull output, size_t pixel_count, size_t *_Nonnull decoded,
                                     size_t *_Nonnull end);

/// Draws the first `decoded / width` lines (in stream order: with `interlaced`, GIF's four passes)
/// of a `width` x `height` frame of palette indices at (`left`, `top`) onto an RGBA canvas,
/// clipped to it: `palette` has 256 RGBA words, pixels of index `transparent` (-1: none) are
/// left as they are.
void ik_gif_draw(const uint8_t *_Nonnull indices, size_t decoded, int width, int height, int interlaced, int left,
                 int top, const uint32_t *_Nonnull palette, int transparent, uint8_t *_Nonnull canvas, size_t stride,
                 int canvas_width, int canvas_height);

#ifdef __cplusplus
}
#endif
