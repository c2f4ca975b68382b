// Grayscale of RGBA8 pixels: L = (19595 R + 38470 G + 7471 B + 2^15) >> 16 (ITU-R 601, Pillow's
// convert("L")) in the three colour channels, alpha kept. SSE2: pmaddwd takes R and G (as
// 19595 R + 5702 G, since 38470 does not fit a signed 16-bit weight; the other 32768 G is a
// shift) and B per pixel, four pixels per step.
#include "ik_pixel_loops.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline uint32_t gray_pixel(uint32_t pixel) {
    uint32_t r = pixel & 0xFF, g = (pixel >> 8) & 0xFF, b = (pixel >> 16) & 0xFF;
    uint32_t luma = (19595 * r + 38470 * g + 7471 * b + 32768) >> 16;
    return luma * 0x010101u | (pixel & 0xFF000000u);
}

void ik_grayscale_rgba(const uint8_t *source, size_t source_stride, uint8_t *destination, size_t destination_stride,
                       int width, int height) {
    // An output beyond the caches goes out with streaming stores: its lines are not read first.
    const int streaming = (size_t)width * 4 * (size_t)height >= ((size_t)16 << 20) &&
                          ((uintptr_t)destination | destination_stride) % 16 == 0;
    for (int y = 0; y < height; y++) {
        const uint8_t *in = source + (size_t)y * source_stride;
        uint8_t *out = destination + (size_t)y * destination_stride;
        int x = 0;
#if defined(__SSE2__)
        const __m128i zero = _mm_setzero_si128();
        const __m128i weights = _mm_set_epi16(0, 7471, 5702, 19595, 0, 7471, 5702, 19595);
        const __m128i rounding = _mm_set1_epi32(32768);
        const __m128i green = _mm_set1_epi32(0xFF00), alpha = _mm_set1_epi32((int)0xFF000000u);
        for (; x + 4 <= width; x += 4) {
            __m128i pixels = _mm_loadu_si128((const __m128i *)(in + 4 * (size_t)x));
            __m128 low = _mm_castsi128_ps(_mm_madd_epi16(_mm_unpacklo_epi8(pixels, zero), weights));
            __m128 high = _mm_castsi128_ps(_mm_madd_epi16(_mm_unpackhi_epi8(pixels, zero), weights));
            // [RG0 B0 RG1 B1] [RG2 B2 RG3 B3] → RG0..3 + B0..3
            __m128i rg = _mm_castps_si128(_mm_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0)));
            __m128i b = _mm_castps_si128(_mm_shuffle_ps(low, high, _MM_SHUFFLE(3, 1, 3, 1)));
            __m128i g = _mm_slli_epi32(_mm_and_si128(pixels, green), 7);
            __m128i luma = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(rg, b), _mm_add_epi32(g, rounding)), 16);
            __m128i gray = _mm_or_si128(_mm_or_si128(luma, _mm_slli_epi32(luma, 8)), _mm_slli_epi32(luma, 16));
            __m128i result = _mm_or_si128(gray, _mm_and_si128(pixels, alpha));
            if (streaming) {
                _mm_stream_si128((__m128i *)(out + 4 * (size_t)x), result);
            } else {
                _mm_storeu_si128((__m128i *)(out + 4 * (size_t)x), result);
            }
        }
#endif
        for (; x < width; x++) {
            uint32_t pixel;
            memcpy(&pixel, in + 4 * (size_t)x, 4);
            pixel = gray_pixel(pixel);
            memcpy(out + 4 * (size_t)x, &pixel, 4);
        }
    }
#if defined(__SSE2__)
    if (streaming) _mm_sfence();
#endif
}
