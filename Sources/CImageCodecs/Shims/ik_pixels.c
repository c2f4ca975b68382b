#include "ik_pixel_loops.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "ik_pixels.h"

// Premultiplying: each colour byte c becomes round(c × a / 255), computed as
// ((c·a + 128) + (c·a + 128) >> 8) >> 8 — exact in 16 bits, so the vector loops below give the
// scalar loop's bytes; alpha times 255 through the same formula is alpha again. Runs of opaque
// pixels (most of a GIF's or a PNG's) are copied, runs of transparent ones zeroed.

#if IK_HAS_AVX2_DISPATCH
IK_AVX2 static int premultiply_avx2(const uint8_t *row, uint8_t *out, int count) {
    const __m256i alpha_bits = _mm256_set1_epi32((int)0xFF000000u), zero = _mm256_setzero_si256();
    const __m256i half = _mm256_set1_epi16(128), opaque = _mm256_set1_epi16(255);
    int x = 0;
    for (; x + 8 <= count; x += 8) {
        __m256i value = _mm256_loadu_si256((const __m256i *)(row + 4 * x));
        if (_mm256_testc_si256(value, alpha_bits)) {
            _mm256_storeu_si256((__m256i *)(out + 4 * x), value);
            continue;
        }
        if (_mm256_testz_si256(value, alpha_bits)) {
            _mm256_storeu_si256((__m256i *)(out + 4 * x), zero);
            continue;
        }
        __m256i low = _mm256_unpacklo_epi8(value, zero), high = _mm256_unpackhi_epi8(value, zero);
        // Each pixel's alpha in its four words, 255 in the alpha word itself.
        __m256i low_alpha = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(low, 0xFF), 0xFF);
        __m256i high_alpha = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(high, 0xFF), 0xFF);
        low_alpha = _mm256_blend_epi16(low_alpha, opaque, 0x88);
        high_alpha = _mm256_blend_epi16(high_alpha, opaque, 0x88);
        low = _mm256_add_epi16(_mm256_mullo_epi16(low, low_alpha), half);
        high = _mm256_add_epi16(_mm256_mullo_epi16(high, high_alpha), half);
        low = _mm256_srli_epi16(_mm256_add_epi16(low, _mm256_srli_epi16(low, 8)), 8);
        high = _mm256_srli_epi16(_mm256_add_epi16(high, _mm256_srli_epi16(high, 8)), 8);
        _mm256_storeu_si256((__m256i *)(out + 4 * x), _mm256_packus_epi16(low, high));
    }
    return x;
}
#endif

#if defined(__SSE2__)
static int premultiply_sse2(const uint8_t *row, uint8_t *out, int count) {
    const __m128i alpha_bits = _mm_set1_epi32((int)0xFF000000u), zero = _mm_setzero_si128();
    const __m128i half = _mm_set1_epi16(128);
    const __m128i colour_words = _mm_set_epi16(0, -1, -1, -1, 0, -1, -1, -1);
    const __m128i alpha_word = _mm_set_epi16(255, 0, 0, 0, 255, 0, 0, 0);
    int x = 0;
    for (; x + 4 <= count; x += 4) {
        __m128i value = _mm_loadu_si128((const __m128i *)(row + 4 * x));
        __m128i alpha = _mm_and_si128(value, alpha_bits);
        if (_mm_movemask_epi8(_mm_cmpeq_epi32(alpha, alpha_bits)) == 0xFFFF) {
            _mm_storeu_si128((__m128i *)(out + 4 * x), value);
            continue;
        }
        if (_mm_movemask_epi8(_mm_cmpeq_epi32(alpha, zero)) == 0xFFFF) {
            _mm_storeu_si128((__m128i *)(out + 4 * x), zero);
            continue;
        }
        __m128i low = _mm_unpacklo_epi8(value, zero), high = _mm_unpackhi_epi8(value, zero);
        __m128i low_alpha = _mm_shufflehi_epi16(_mm_shufflelo_epi16(low, 0xFF), 0xFF);
        __m128i high_alpha = _mm_shufflehi_epi16(_mm_shufflelo_epi16(high, 0xFF), 0xFF);
        low_alpha = _mm_or_si128(_mm_and_si128(low_alpha, colour_words), alpha_word);
        high_alpha = _mm_or_si128(_mm_and_si128(high_alpha, colour_words), alpha_word);
        low = _mm_add_epi16(_mm_mullo_epi16(low, low_alpha), half);
        high = _mm_add_epi16(_mm_mullo_epi16(high, high_alpha), half);
        low = _mm_srli_epi16(_mm_add_epi16(low, _mm_srli_epi16(low, 8)), 8);
        high = _mm_srli_epi16(_mm_add_epi16(high, _mm_srli_epi16(high, 8)), 8);
        _mm_storeu_si128((__m128i *)(out + 4 * x), _mm_packus_epi16(low, high));
    }
    return x;
}
#endif

void ik_premultiply_row(const uint8_t *row, uint8_t *out, int count) {
    int start = 0;
#if IK_HAS_AVX2_DISPATCH
    if (ik_uses_avx2()) start = premultiply_avx2(row, out, count);
#endif
#if defined(__SSE2__)
    start += premultiply_sse2(row + 4 * start, out + 4 * start, count - start);
#endif
    for (int x = start; x < count; x++) {
        const uint8_t *p = row + 4 * x;
        uint8_t *q = out + 4 * x;
        uint32_t alpha = p[3];
        for (int c = 0; c < 3; c++) {
            uint32_t product = p[c] * alpha + 128;
            q[c] = (uint8_t)((product + (product >> 8)) >> 8);
        }
        q[3] = (uint8_t)alpha;
    }
}

/// 255 × 65536 / a, rounded, for a = 1…255 (index 0 unused).
static const uint32_t *reciprocals(void) {
    static uint32_t table[256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        // Idempotent: racing threads write the same values.
        for (uint32_t a = 1; a < 256; a++) __atomic_store_n(&table[a], (255u * 65536u + a / 2) / a, __ATOMIC_RELAXED);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return table;
}

void ik_unpremultiply_row(uint8_t *row, int count) {
    const uint32_t *reciprocal = reciprocals();
    for (int x = 0; x < count; x++) {
        uint8_t *p = row + 4 * x;
        uint32_t alpha = p[3];
        if (alpha == 255) continue;
        if (alpha == 0) {
            p[0] = p[1] = p[2] = 0;
            continue;
        }
        uint32_t r = __atomic_load_n(&reciprocal[alpha], __ATOMIC_RELAXED);
        for (int c = 0; c < 3; c++) {
            uint32_t value = (p[c] * r + 32768) >> 16;
            p[c] = (uint8_t)(value > 255 ? 255 : value);
        }
    }
}

/// One pixel of cairo's ARGB32 word as straight RGBA bytes.
static inline uint32_t cairo_pixel_to_rgba(uint32_t value, const uint32_t *reciprocal) {
    uint32_t swapped = (value & 0xFF00FF00u) | ((value >> 16) & 0xFFu) | ((value & 0xFFu) << 16);
    uint32_t alpha = value >> 24;
    if (alpha == 255 || alpha == 0) return swapped;
    uint32_t r = __atomic_load_n(&reciprocal[alpha], __ATOMIC_RELAXED), out = swapped & 0xFF000000u;
    for (int shift = 0; shift < 24; shift += 8) {
        uint32_t channel = (((swapped >> shift) & 0xFFu) * r + 32768) >> 16;
        out |= (channel > 255 ? 255 : channel) << shift;
    }
    return out;
}

#if IK_HAS_AVX2_DISPATCH
/// Eight pixels at a time, partial alpha included (an SVG's gradients and antialiased edges are
/// most of its pixels): every alpha goes through the reciprocal table, whose entry for 255 is
/// the identity (65536); alpha 0 keeps its colour bytes, swapped, as the scalar loop does.
/// Returns how many pixels it converted; `all` collects the words' AND.
IK_AVX2 static int cairo_to_rgba_avx2(uint32_t *pixels, int count, const uint32_t *reciprocal, uint32_t *all) {
    const __m256i low = _mm256_set1_epi32(0xFF), keep = _mm256_set1_epi32((int)0xFF00FF00u);
    const __m256i half = _mm256_set1_epi32(32768), max = _mm256_set1_epi32(255);
    __m256i every = _mm256_set1_epi32(-1);
    int x = 0;
    // Red and blue trade places: bytes 2, 1, 0, 3 of each word.
    const __m256i swap = _mm256_setr_epi8(2, 1, 0, 3, 6, 5, 4, 7, 10, 9, 8, 11, 14, 13, 12, 15, 2, 1, 0, 3, 6, 5, 4,
                                          7, 10, 9, 8, 11, 14, 13, 12, 15);
    const __m256i minus_one = _mm256_set1_epi32(-1), limit = _mm256_set1_epi32(254);
    for (; x + 8 <= count; x += 8) {
        __m256i value = _mm256_loadu_si256((const __m256i *)(pixels + x));
        every = _mm256_and_si256(every, value);
        __m256i alpha = _mm256_srli_epi32(value, 24);
        // Opaque and transparent pixels (shapes' insides, backgrounds) only swap.
        __m256i below = _mm256_sub_epi32(alpha, _mm256_set1_epi32(1));  // 0...253 is partial
        __m256i partial = _mm256_and_si256(_mm256_cmpgt_epi32(below, minus_one), _mm256_cmpgt_epi32(limit, below));
        if (_mm256_testz_si256(partial, partial)) {
            _mm256_storeu_si256((__m256i *)(pixels + x), _mm256_shuffle_epi8(value, swap));
            continue;
        }
        __m256i r = _mm256_i32gather_epi32((const int *)reciprocal, alpha, 4);
        __m256i red = _mm256_and_si256(_mm256_srli_epi32(value, 16), low);
        __m256i green = _mm256_and_si256(_mm256_srli_epi32(value, 8), low);
        __m256i blue = _mm256_and_si256(value, low);
        red = _mm256_min_epu32(_mm256_srli_epi32(_mm256_add_epi32(_mm256_mullo_epi32(red, r), half), 16), max);
        green = _mm256_min_epu32(_mm256_srli_epi32(_mm256_add_epi32(_mm256_mullo_epi32(green, r), half), 16), max);
        blue = _mm256_min_epu32(_mm256_srli_epi32(_mm256_add_epi32(_mm256_mullo_epi32(blue, r), half), 16), max);
        __m256i out = _mm256_or_si256(
            _mm256_slli_epi32(alpha, 24),
            _mm256_or_si256(_mm256_slli_epi32(blue, 16), _mm256_or_si256(_mm256_slli_epi32(green, 8), red)));
        __m256i swapped = _mm256_or_si256(
            _mm256_and_si256(value, keep),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(value, 16), low),
                            _mm256_slli_epi32(_mm256_and_si256(value, low), 16)));
        out = _mm256_blendv_epi8(out, swapped, _mm256_cmpeq_epi32(alpha, _mm256_setzero_si256()));
        _mm256_storeu_si256((__m256i *)(pixels + x), out);
    }
    __m128i folded = _mm_and_si128(_mm256_castsi256_si128(every), _mm256_extracti128_si256(every, 1));
    uint32_t lanes[4];
    _mm_storeu_si128((__m128i *)lanes, folded);
    *all &= lanes[0] & lanes[1] & lanes[2] & lanes[3];
    return x;
}
#endif

int ik_cairo_to_rgba_row(uint8_t *row, int count) {
    // Whole pixels as words (rows are 4-byte aligned): red and blue trade places; a pixel whose
    // alpha is neither 0 nor 255 is also unpremultiplied (a transparent one is 0,0,0,0 either
    // way). Four opaque-or-transparent pixels at a time where SSE2 is there: shapes' insides
    // and backgrounds; their antialiased edges one by one.
    const uint32_t *reciprocal = reciprocals();
    uint32_t *pixels = (uint32_t *)row;
    uint32_t all = 0xFFFFFFFFu;
    int x = 0;
#if IK_HAS_AVX2_DISPATCH
    if (ik_uses_avx2()) x = cairo_to_rgba_avx2(pixels, count, reciprocal, &all);
#endif
#if defined(__SSE2__)
    const __m128i low = _mm_set1_epi32(0xFF), keep = _mm_set1_epi32((int)0xFF00FF00u);
    const __m128i minus_one = _mm_set1_epi32(-1), limit = _mm_set1_epi32(254);
    __m128i all_alpha = _mm_set1_epi32(-1);
    for (; x + 4 <= count; x += 4) {
        __m128i value = _mm_loadu_si128((const __m128i *)(pixels + x));
        __m128i alpha = _mm_srli_epi32(value, 24);
        __m128i below = _mm_sub_epi32(alpha, _mm_set1_epi32(1));  // 0...253 is partial
        __m128i partial = _mm_and_si128(_mm_cmpgt_epi32(below, minus_one), _mm_cmplt_epi32(below, limit));
        all_alpha = _mm_and_si128(all_alpha, value);
        if (_mm_movemask_epi8(partial) != 0) {
            for (int i = 0; i < 4; i++) pixels[x + i] = cairo_pixel_to_rgba(pixels[x + i], reciprocal);
            continue;
        }
        __m128i swapped = _mm_or_si128(
            _mm_and_si128(value, keep),
            _mm_or_si128(_mm_and_si128(_mm_srli_epi32(value, 16), low), _mm_slli_epi32(_mm_and_si128(value, low), 16)));
        _mm_storeu_si128((__m128i *)(pixels + x), swapped);
    }
    uint32_t lanes[4];
    _mm_storeu_si128((__m128i *)lanes, all_alpha);
    all &= lanes[0] & lanes[1] & lanes[2] & lanes[3];
#endif
    for (; x < count; x++) {
        all &= pixels[x];
        pixels[x] = cairo_pixel_to_rgba(pixels[x], reciprocal);
    }
    return (all >> 24) == 0xFFu;
}

// -1: not yet asked; 0 or 1 otherwise. A test may force 0 to run the SSE2 loops.
static int avx2_state = -1;

int ik_uses_avx2(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    int value = __atomic_load_n(&avx2_state, __ATOMIC_RELAXED);
    if (value < 0) {
        __builtin_cpu_init();
        value = __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&avx2_state, value, __ATOMIC_RELAXED);
    }
    return value;
#else
    return 0;
#endif
}

void ik_set_avx2_allowed(int allowed) {
    if (allowed) {
        __atomic_store_n(&avx2_state, -1, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&avx2_state, 0, __ATOMIC_RELAXED);
    }
}
