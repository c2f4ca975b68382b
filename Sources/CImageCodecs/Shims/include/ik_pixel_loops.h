// The pixel loops Swift would not vectorise: blur, resampling, quarter turns, grayscale, colour.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "ik_status.h"

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Blur

/// Blurs RGBA8 `source` into `destination` (same size, separate memory) with a cascade of box
/// blurs of the given radii (each 0...127; 0 skips), rows first, then columns; edges repeat their
/// outermost pixels. With `premultiply`, colours are weighted by alpha while blurring (for images
/// that are not opaque). SSE2, and AVX2 where the processor has it. IK_ERR_INTERNAL: bad
/// arguments or out of memory for the two line buffers.
ik_status ik_box_blur_rgba(const uint8_t *_Nonnull source, size_t source_stride, uint8_t *_Nonnull destination,
                           size_t destination_stride, int width, int height, const int *_Nonnull radii,
                           int radius_count, int premultiply);

// MARK: - Resampling

/// Scales RGBA8 `source` (src_w × src_h) to `destination` (dst_w × dst_h): an integer box
/// average of box_x × box_y pixels first (box_y ≤ 257), then a horizontal and a vertical filter
/// with 14-bit weights: output pixel x takes `h_counts[x]` taps from reduced column
/// `h_starts[x]` with weights `h_weights[x * h_stride ...]` (each pixel's weights summing to
/// 1 << 14), and likewise for rows. The intermediate is 8-bit, as in Pillow. With `premultiply`
/// the filtering happens in premultiplied alpha. IK_ERR_INTERNAL: bad arguments or out of memory.
ik_status ik_resample_rgba(const uint8_t *_Nonnull source, size_t source_stride, int src_w, int src_h, int box_x,
                           int box_y, uint8_t *_Nonnull destination, size_t destination_stride, int dst_w, int dst_h,
                           const int32_t *_Nonnull h_starts, const int32_t *_Nonnull h_counts,
                           const int16_t *_Nonnull h_weights, int h_stride, const int32_t *_Nonnull v_starts,
                           const int32_t *_Nonnull v_counts, const int16_t *_Nonnull v_weights, int v_stride,
                           int premultiply);

// MARK: - Quarter turns

/// Fills `out_width × out_height` RGBA8 pixels: output pixel (ox, oy) is the source pixel at byte
/// `origin + ox * step_x + oy * step_y`, where step_x is ± the source stride and step_y ± 4 (the
/// orientations that swap width and height). 4 × 4 SSE2 transposes in 32 × 32 tiles.
void ik_remap_transposed_rgba(const uint8_t *_Nonnull source, size_t source_stride, uint8_t *_Nonnull destination,
                              size_t destination_stride, int out_width, int out_height, ptrdiff_t origin,
                              ptrdiff_t step_x, ptrdiff_t step_y);

// MARK: - Grayscale

/// Writes RGBA8 `source` in shades of grey into `destination` (may be the same memory):
/// L = (19595 R + 38470 G + 7471 B + 2^15) >> 16 in the colour channels, alpha kept.
void ik_grayscale_rgba(const uint8_t *_Nonnull source, size_t source_stride, uint8_t *_Nonnull destination,
                       size_t destination_stride, int width, int height);

/// Allows (the default) or forbids the AVX2 copies of the blur and resampling loops, so that
/// tests can run the SSE2 ones on a processor that has AVX2.
void ik_set_avx2_allowed(int allowed);

// MARK: - Colour

/// Entries of the output table of ``ik_color_matrix_trc``: linear light 0...1 in 1/16383 steps.
#define IK_COLOR_OUT_ENTRIES 16384

/// Converts RGBA8 pixels in place: each colour channel through its input table (`lin`, 3 × 256
/// floats, linear light), the 3 × 3 row-major `matrix`, then `out` (IK_COLOR_OUT_ENTRIES bytes,
/// the index being the clamped value × (entries − 1), rounded). `out32` holds the same table
/// widened to int32 for the AVX2 gathers (NULL: scalar only). Alpha is left as it is.
void ik_color_matrix_trc(uint8_t *_Nonnull pixels, size_t stride, int width, int height, const float *_Nonnull lin,
                         const float *_Nonnull matrix, const uint8_t *_Nonnull out, const int32_t *_Nullable out32);

/// Maps each colour channel of RGBA8 pixels through its own 256-entry table (`table`: R, G, B
/// tables one after the other), alpha kept: for transforms that act on each channel alone.
void ik_color_lut_rgb(uint8_t *_Nonnull pixels, size_t stride, int width, int height, const uint8_t *_Nonnull table);

/// `count` RGBA8 pixels with colours multiplied by alpha (c × a / 255, rounded), into `out` (which
/// may be `row`). AVX2 or SSE2 where the machine has them, with the scalar loop's bytes.
void ik_premultiply_row(const uint8_t *_Nonnull row, uint8_t *_Nonnull out, int count);

/// Straight alpha again, in place: c × 255 / a, rounded (a table of 16.16 reciprocals; within one
/// level of the exact quotient), clamped to 255; a fully transparent pixel becomes 0,0,0,0.
void ik_unpremultiply_row(uint8_t *_Nonnull row, int count);

/// cairo's ARGB32 on a little-endian machine (B, G, R, A bytes, premultiplied) to straight
/// RGBA8, in place. Returns 1 when every pixel of the row is opaque.
int ik_cairo_to_rgba_row(uint8_t *_Nonnull row, int count);

/// Widens one row of 8-bit gray (1), gray + alpha (2), RGB (3) or RGBA (4) samples to RGBA8.
void ik_expand_to_rgba(const uint8_t *_Nonnull source, uint8_t *_Nonnull destination, int width, int channels);

#ifdef __cplusplus
}
#endif
