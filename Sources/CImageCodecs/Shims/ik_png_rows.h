#ifndef IK_PNG_ROWS_H
#define IK_PNG_ROWS_H

// The fast PNG path's row work, included by its decoder (ik_png_fast.c) alone so that the row
// functions compile into its loop: undoing a row's filter (SSE2 for 3- and 4-byte pixels; pairs
// of Paeth rows interleaved) and expanding an unfiltered row to RGBA8 with the transforms of
// ik_png.c. Not exported.

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct {
    int color_type;
    int bit_depth;
    /// Palette and gray (depth <= 8) images: the RGBA pixel of every sample value.
    uint32_t table[256];
    int has_trns;
    /// tRNS colour of gray (in [0]) and RGB images, at the image's bit depth.
    uint16_t trns[3];
} ik_png_expander;

// MARK: Unfiltering

/// The Paeth predictor without branches (photo data makes its branches unpredictable): a unless
/// b is strictly closer, then c when it is strictly closer than that — libpng's tie order.
static inline int ik_paeth(int a, int b, int c) {
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
    int nearer = pb < pa ? b : a;
    int distance = pb < pa ? pb : pa;
    return pc < distance ? c : nearer;
}

static void ik_unfilter_scalar(int filter, unsigned char *row, const unsigned char *prior, size_t length, size_t bpp) {
    size_t i;
    switch (filter) {
    case 1:
        for (i = bpp; i < length; i++) row[i] = (unsigned char)(row[i] + row[i - bpp]);
        break;
    case 2:
        for (i = 0; i < length; i++) row[i] = (unsigned char)(row[i] + prior[i]);
        break;
    case 3:
        for (i = 0; i < bpp && i < length; i++) row[i] = (unsigned char)(row[i] + (prior[i] >> 1));
        for (; i < length; i++) row[i] = (unsigned char)(row[i] + ((row[i - bpp] + prior[i]) >> 1));
        break;
    case 4:
        for (i = 0; i < bpp && i < length; i++) row[i] = (unsigned char)(row[i] + prior[i]);
        for (; i < length; i++) row[i] = (unsigned char)(row[i] + ik_paeth(row[i - bpp], prior[i], prior[i - bpp]));
        break;
    default:
        break;
    }
}

#if defined(__SSE2__)
// One pixel (3 or 4 bytes) at a time in the low lanes of an SSE register: the filters depend on
// the pixel to the left, so the parallelism is across the pixel's channels.
static inline __attribute__((always_inline)) __m128i ik_load_pixel(const unsigned char *p, size_t bpp) {
    uint32_t value = 0;
    memcpy(&value, p, bpp);
    return _mm_cvtsi32_si128((int)value);
}

static inline __attribute__((always_inline)) void ik_store_pixel(unsigned char *p, __m128i pixel, size_t bpp) {
    uint32_t value = (uint32_t)_mm_cvtsi128_si32(pixel);
    memcpy(p, &value, bpp);
}

static inline __attribute__((always_inline)) void ik_unfilter_sub_sse2(unsigned char *row, size_t length, size_t bpp) {
    __m128i left = _mm_setzero_si128();
    for (size_t i = 0; i + bpp <= length; i += bpp) {
        left = _mm_add_epi8(left, ik_load_pixel(row + i, bpp));
        ik_store_pixel(row + i, left, bpp);
    }
}

static inline __attribute__((always_inline)) void ik_unfilter_avg_sse2(unsigned char *row, const unsigned char *prior, size_t length, size_t bpp) {
    const __m128i zero = _mm_setzero_si128();
    const __m128i one = _mm_set1_epi8(1);
    __m128i left = zero;
    for (size_t i = 0; i + bpp <= length; i += bpp) {
        __m128i above = ik_load_pixel(prior + i, bpp);
        // floor((a + b) / 2) = avg_epu8 (which rounds up) minus the rounding bit (a ^ b) & 1.
        __m128i average = _mm_sub_epi8(_mm_avg_epu8(left, above), _mm_and_si128(_mm_xor_si128(left, above), one));
        left = _mm_add_epi8(average, ik_load_pixel(row + i, bpp));
        ik_store_pixel(row + i, left, bpp);
    }
}

static __m128i ik_abs_epi16(__m128i x) {
    __m128i negative = _mm_srai_epi16(x, 15);
    return _mm_sub_epi16(_mm_xor_si128(x, negative), negative);
}

static __m128i ik_if_then_else(__m128i condition, __m128i yes, __m128i no) {
    return _mm_or_si128(_mm_and_si128(condition, yes), _mm_andnot_si128(condition, no));
}

static inline __attribute__((always_inline)) void ik_unfilter_paeth_sse2(unsigned char *row, const unsigned char *prior, size_t length, size_t bpp) {
    const __m128i zero = _mm_setzero_si128();
    __m128i a = zero, c = zero;  // left and upper-left, widened to 16 bits
    for (size_t i = 0; i + bpp <= length; i += bpp) {
        __m128i b = _mm_unpacklo_epi8(ik_load_pixel(prior + i, bpp), zero);
        __m128i pa = ik_abs_epi16(_mm_sub_epi16(b, c));          // |p - a| = |b - c|
        __m128i pb = ik_abs_epi16(_mm_sub_epi16(a, c));          // |p - b| = |a - c|
        __m128i pc = ik_abs_epi16(_mm_sub_epi16(_mm_add_epi16(a, b), _mm_add_epi16(c, c)));
        // a when pa <= pb and pa <= pc, else b when pb <= pc, else c.
        __m128i smallest = _mm_min_epi16(pc, _mm_min_epi16(pa, pb));
        __m128i predictor = ik_if_then_else(_mm_cmpeq_epi16(smallest, pa), a,
                                            ik_if_then_else(_mm_cmpeq_epi16(smallest, pb), b, c));
        __m128i raw = _mm_unpacklo_epi8(ik_load_pixel(row + i, bpp), zero);
        __m128i value = _mm_and_si128(_mm_add_epi16(raw, predictor), _mm_set1_epi16(0xFF));
        ik_store_pixel(row + i, _mm_packus_epi16(value, value), bpp);
        c = b;
        a = value;
    }
}

/// One Paeth step on widened pixels: the predictor from a (left), b (above), c (upper left).
static inline __attribute__((always_inline)) __m128i ik_paeth_predict_sse2(__m128i a, __m128i b, __m128i c) {
    __m128i pa = ik_abs_epi16(_mm_sub_epi16(b, c));
    __m128i pb = ik_abs_epi16(_mm_sub_epi16(a, c));
    __m128i pc = ik_abs_epi16(_mm_sub_epi16(_mm_add_epi16(a, b), _mm_add_epi16(c, c)));
    __m128i smallest = _mm_min_epi16(pc, _mm_min_epi16(pa, pb));
    return ik_if_then_else(_mm_cmpeq_epi16(smallest, pa), a, ik_if_then_else(_mm_cmpeq_epi16(smallest, pb), b, c));
}

/// Two consecutive Paeth rows of 3- or 4-byte pixels, interleaved as ik_unfilter_paeth_1x2 does.
static inline __attribute__((always_inline)) void ik_unfilter_paeth_sse2_x2(unsigned char *first, unsigned char *second,
                                                                          const unsigned char *prior, size_t length, size_t bpp) {
    const __m128i zero = _mm_setzero_si128(), mask = _mm_set1_epi16(0xFF);
    __m128i a0 = zero, c0 = zero, a1 = zero, c1 = zero;
    for (size_t i = 0; i + bpp <= length; i += bpp) {
        __m128i b0 = _mm_unpacklo_epi8(ik_load_pixel(prior + i, bpp), zero);
        __m128i raw0 = _mm_unpacklo_epi8(ik_load_pixel(first + i, bpp), zero);
        __m128i value0 = _mm_and_si128(_mm_add_epi16(raw0, ik_paeth_predict_sse2(a0, b0, c0)), mask);
        ik_store_pixel(first + i, _mm_packus_epi16(value0, value0), bpp);
        __m128i raw1 = _mm_unpacklo_epi8(ik_load_pixel(second + i, bpp), zero);
        __m128i value1 = _mm_and_si128(_mm_add_epi16(raw1, ik_paeth_predict_sse2(a1, value0, c1)), mask);
        ik_store_pixel(second + i, _mm_packus_epi16(value1, value1), bpp);
        c0 = b0;
        a0 = value0;
        c1 = value0;
        a1 = value1;
    }
}
#endif

/// Two consecutive Paeth rows of one-byte pixels at once: `first` over `prior`, `second` over
/// `first`. Byte i of `second` needs bytes i and i-1 of `first`, so the two serial chains run
/// interleaved, one step apart, and the processor overlaps them (each alone is bound by the
/// predictor's latency, not by arithmetic).
static void ik_unfilter_paeth_1x2(unsigned char *first, unsigned char *second, const unsigned char *prior, size_t length) {
    if (length == 0) return;
    first[0] = (unsigned char)(first[0] + prior[0]);
    second[0] = (unsigned char)(second[0] + first[0]);
    for (size_t i = 1; i < length; i++) {
        first[i] = (unsigned char)(first[i] + ik_paeth(first[i - 1], prior[i], prior[i - 1]));
        second[i] = (unsigned char)(second[i] + ik_paeth(second[i - 1], first[i], first[i - 1]));
    }
}

/// Undoes one row's filter (`prior` is the row above, unfiltered). Returns 0, or -1 for a filter
/// type libpng rejects.
static int ik_png_unfilter(int filter, unsigned char *row, const unsigned char *prior, size_t length, size_t bpp) {
    if (filter == 0) return 0;
    if (filter > 4) return -1;
#if defined(__SSE2__)
    // The pixel size as a constant in each call, so that the 3- and 4-byte loads and stores
    // compile to plain moves (a variable size is a call to memcpy).
    if (bpp == 3 && filter != 2) {
        if (filter == 1) ik_unfilter_sub_sse2(row, length, 3);
        else if (filter == 3) ik_unfilter_avg_sse2(row, prior, length, 3);
        else ik_unfilter_paeth_sse2(row, prior, length, 3);
        return 0;
    }
    if (bpp == 4 && filter != 2) {
        if (filter == 1) ik_unfilter_sub_sse2(row, length, 4);
        else if (filter == 3) ik_unfilter_avg_sse2(row, prior, length, 4);
        else ik_unfilter_paeth_sse2(row, prior, length, 4);
        return 0;
    }
#endif
    ik_unfilter_scalar(filter, row, prior, length, bpp);
    return 0;
}

/// Two consecutive Paeth rows: `first` over `prior`, then `second` over `first` (1-, 3- and
/// 4-byte pixels interleaved for speed, the rest one after the other).
static void ik_png_unfilter_paeth_pair(unsigned char *first, unsigned char *second, const unsigned char *prior, size_t length,
                                size_t bpp) {
    if (bpp == 1) {
        ik_unfilter_paeth_1x2(first, second, prior, length);
        return;
    }
#if defined(__SSE2__)
    // Constant pixel sizes, as in ik_png_unfilter.
    if (bpp == 3) {
        ik_unfilter_paeth_sse2_x2(first, second, prior, length, 3);
        return;
    }
    if (bpp == 4) {
        ik_unfilter_paeth_sse2_x2(first, second, prior, length, 4);
        return;
    }
#endif
    ik_unfilter_scalar(4, first, prior, length, bpp);
    ik_unfilter_scalar(4, second, first, length, bpp);
}

// MARK: Expansion to RGBA8


/// The RGBA8 pixel of the four samples, as it sits in memory.
static uint32_t ik_png_rgba(unsigned r, unsigned g, unsigned b, unsigned a) {
    unsigned char bytes[4] = {(unsigned char)r, (unsigned char)g, (unsigned char)b, (unsigned char)a};
    uint32_t value;
    memcpy(&value, bytes, 4);
    return value;
}

/// Writes `width` RGBA8 pixels from one unfiltered row.
static void ik_png_expand_row(const ik_png_expander *e, const unsigned char *src, unsigned char *dst, uint32_t width) {
    uint32_t x;
    int depth = e->bit_depth;
    switch (e->color_type) {
    case 3:
    case 0:
        if (depth == 16) {  // gray 16
            for (x = 0; x < width; x++, src += 2, dst += 4) {
                unsigned value = (unsigned)src[0] << 8 | src[1];
                unsigned alpha = e->has_trns && value == e->trns[0] ? 0 : 255;
                dst[0] = dst[1] = dst[2] = src[0];
                dst[3] = (unsigned char)alpha;
            }
        } else if (depth == 8) {
            uint32_t *out = (uint32_t *)(void *)dst;
            x = 0;
#if defined(__SSE2__)
            if (e->color_type == 0 && !e->has_trns) {
                // Gray to RGBA, 16 pixels at a time: g → g g g 255.
                const __m128i opaque = _mm_set1_epi16((short)0xFF00);
                for (; x + 16 <= width; x += 16) {
                    __m128i gray = _mm_loadu_si128((const __m128i *)(const void *)(src + x));
                    __m128i gg_low = _mm_unpacklo_epi8(gray, gray), gg_high = _mm_unpackhi_epi8(gray, gray);
                    __m128i ga_low = _mm_or_si128(_mm_unpacklo_epi8(gray, _mm_setzero_si128()), opaque);
                    __m128i ga_high = _mm_or_si128(_mm_unpackhi_epi8(gray, _mm_setzero_si128()), opaque);
                    _mm_storeu_si128((__m128i *)(void *)(out + x), _mm_unpacklo_epi16(gg_low, ga_low));
                    _mm_storeu_si128((__m128i *)(void *)(out + x + 4), _mm_unpackhi_epi16(gg_low, ga_low));
                    _mm_storeu_si128((__m128i *)(void *)(out + x + 8), _mm_unpacklo_epi16(gg_high, ga_high));
                    _mm_storeu_si128((__m128i *)(void *)(out + x + 12), _mm_unpackhi_epi16(gg_high, ga_high));
                }
            }
#endif
            for (; x < width; x++) out[x] = e->table[src[x]];
        } else {
            uint32_t *out = (uint32_t *)(void *)dst;
            unsigned mask = (1u << depth) - 1, perByte = 8u / (unsigned)depth;
            for (x = 0; x < width; x++) {
                unsigned shift = 8u - (unsigned)depth * (x % perByte + 1);
                out[x] = e->table[(src[x / perByte] >> shift) & mask];
            }
        }
        break;
    case 2:
        if (depth == 8) {
            for (x = 0; x < width; x++, src += 3, dst += 4) {
                dst[0] = src[0];
                dst[1] = src[1];
                dst[2] = src[2];
                dst[3] = e->has_trns && src[0] == e->trns[0] && src[1] == e->trns[1] && src[2] == e->trns[2] ? 0 : 255;
            }
        } else {
            for (x = 0; x < width; x++, src += 6, dst += 4) {
                unsigned r = (unsigned)src[0] << 8 | src[1], g = (unsigned)src[2] << 8 | src[3], b = (unsigned)src[4] << 8 | src[5];
                dst[0] = src[0];
                dst[1] = src[2];
                dst[2] = src[4];
                dst[3] = e->has_trns && r == e->trns[0] && g == e->trns[1] && b == e->trns[2] ? 0 : 255;
            }
        }
        break;
    case 4:
        if (depth == 8) {
            for (x = 0; x < width; x++, src += 2, dst += 4) {
                dst[0] = dst[1] = dst[2] = src[0];
                dst[3] = src[1];
            }
        } else {
            for (x = 0; x < width; x++, src += 4, dst += 4) {
                dst[0] = dst[1] = dst[2] = src[0];
                dst[3] = src[2];
            }
        }
        break;
    case 6:
        if (depth == 8) {
            memcpy(dst, src, (size_t)width * 4);
        } else {
            for (x = 0; x < width; x++, src += 8, dst += 4) {
                dst[0] = src[0];
                dst[1] = src[2];
                dst[2] = src[4];
                dst[3] = src[6];
            }
        }
        break;
    }
}

#endif
