// Quarter turns and transposes of RGBA8 pixels (the EXIF orientations that swap width and
// height): output row oy reads a source column. Written in 32 × 32 pixel tiles, so that the 32
// source rows a tile reads stay in cache, and within a tile in 4 × 4 blocks moved with SSE2:
// four 16-byte loads from four source rows, a 4 × 4 transpose of 32-bit pixels, four 16-byte
// stores into four output rows (one load and one store per pixel was the cost before).
#include "ik_pixel_loops.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define TILE 32

static inline void copy_pixel(uint8_t *destination, const uint8_t *source) { memcpy(destination, source, 4); }

void ik_remap_transposed_rgba(const uint8_t *source, size_t source_stride, uint8_t *destination,
                              size_t destination_stride, int out_width, int out_height, ptrdiff_t origin,
                              ptrdiff_t step_x, ptrdiff_t step_y) {
    // step_x moves along source rows (±stride), step_y along a row (±4).
    for (int tile_y = 0; tile_y < out_height; tile_y += TILE) {
        const int bottom = tile_y + TILE < out_height ? tile_y + TILE : out_height;
        for (int tile_x = 0; tile_x < out_width; tile_x += TILE) {
            const int right = tile_x + TILE < out_width ? tile_x + TILE : out_width;
            int oy = tile_y;
#if defined(__SSE2__)
            for (; oy + 4 <= bottom; oy += 4) {
                int ox = tile_x;
                for (; ox + 4 <= right; ox += 4) {
                    __m128i v[4];
                    for (int i = 0; i < 4; i++) {
                        // Pixels (ox + i, oy … oy + 3): four neighbours in one source row.
                        const uint8_t *p = source + origin + (ox + i) * step_x + oy * step_y;
                        if (step_y > 0) {
                            v[i] = _mm_loadu_si128((const __m128i *)p);
                        } else {
                            v[i] = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(p - 12)), _MM_SHUFFLE(0, 1, 2, 3));
                        }
                    }
                    __m128i t0 = _mm_unpacklo_epi32(v[0], v[1]), t1 = _mm_unpacklo_epi32(v[2], v[3]);
                    __m128i t2 = _mm_unpackhi_epi32(v[0], v[1]), t3 = _mm_unpackhi_epi32(v[2], v[3]);
                    uint8_t *d = destination + (size_t)oy * destination_stride + (size_t)ox * 4;
                    _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(t0, t1));
                    _mm_storeu_si128((__m128i *)(d + destination_stride), _mm_unpackhi_epi64(t0, t1));
                    _mm_storeu_si128((__m128i *)(d + 2 * destination_stride), _mm_unpacklo_epi64(t2, t3));
                    _mm_storeu_si128((__m128i *)(d + 3 * destination_stride), _mm_unpackhi_epi64(t2, t3));
                }
                for (; ox < right; ox++)
                    for (int j = 0; j < 4; j++)
                        copy_pixel(destination + (size_t)(oy + j) * destination_stride + (size_t)ox * 4,
                                   source + origin + ox * step_x + (oy + j) * step_y);
            }
#endif
            for (; oy < bottom; oy++)
                for (int ox = tile_x; ox < right; ox++)
                    copy_pixel(destination + (size_t)oy * destination_stride + (size_t)ox * 4,
                               source + origin + ox * step_x + oy * step_y);
        }
    }
}
