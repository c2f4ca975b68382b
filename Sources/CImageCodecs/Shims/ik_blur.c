// Box-cascade blur of RGBA8 pixels (ImageKit's Gaussian approximation; see Bitmap+Blur.swift).
//
// The running sums are 16-bit lanes in blocks of IK_BLUR_LANES: the row pass blurs 16 rows at
// once (position x of a line holds pixel x of each of the 16 rows, 4 channels each), the column
// pass strips of 16 pixels (64 bytes of each row). Every step of a running sum is then one loop
// over 64 independent lanes, which the compiler vectorises: SSE2 by default and AVX2 where the
// processor has it (a second copy of the loops compiled for AVX2, chosen at run time, because a
// package cannot raise the baseline with compiler flags). The row pass moves 4 × 4 pixel tiles
// between the image and the line with SSE2 transposes.
#include "ik_pixel_loops.h"
#include "ik_pixels.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define LANES 64
#define ROWS_PER_BLOCK (LANES / 4)
#define PREFETCH_ROWS 24


// MARK: - Box passes

/// Copies the first and last positions into the `pad` positions before and `pad + 1` after.
ALWAYS_INLINE void replicate_edges(uint16_t *line, int count, int pad) {
    const uint16_t *first = line + (size_t)pad * LANES;
    const uint16_t *last = line + (size_t)(pad + count - 1) * LANES;
    for (int k = 0; k < pad; k++) memcpy(line + (size_t)k * LANES, first, LANES * 2);
    for (int k = pad + count; k < 2 * pad + count + 1; k++) memcpy(line + (size_t)k * LANES, last, LANES * 2);
}

/// One box of width 2r + 1 over `count` positions: a running sum per lane, divided by
/// multiplying with ceil(2^16 / width) and keeping the high half (exact rounding up to width 15,
/// within one level above). VEC is the vector type, with VEC_LANES 16-bit lanes; the ops are the
/// four below, defined per instruction set.
#define BOX_PASS_BODY(VEC, VEC_LANES, LOAD, STORE, SET1, ADD, SUB, MULHI)                          \
    const int width = 2 * radius + 1;                                                             \
    const VEC multiplier = SET1((short)(uint16_t)((65536 + width - 1) / width));                  \
    const VEC half = SET1((short)(width / 2));                                                    \
    enum { N = LANES / VEC_LANES };                                                               \
    VEC sum[N];                                                                                   \
    for (int i = 0; i < N; i++) sum[i] = SET1(0);                                                 \
    for (int k = -radius; k <= radius; k++) {                                                     \
        const uint16_t *row = source + (size_t)(pad + k) * LANES;                                \
        for (int i = 0; i < N; i++) sum[i] = ADD(sum[i], LOAD(row + i * VEC_LANES));             \
    }                                                                                             \
    for (int position = 0; position < count; position++) {                                        \
        uint16_t *out = destination + (size_t)(pad + position) * LANES;                           \
        const uint16_t *entering = source + (size_t)(pad + position + radius + 1) * LANES;        \
        const uint16_t *leaving = source + (size_t)(pad + position - radius) * LANES;             \
        for (int i = 0; i < N; i++) {                                                             \
            STORE(out + i * VEC_LANES, MULHI(ADD(sum[i], half), multiplier));                     \
            sum[i] = SUB(ADD(sum[i], LOAD(entering + i * VEC_LANES)), LOAD(leaving + i * VEC_LANES)); \
        }                                                                                         \
    }                                                                                             \
    replicate_edges(destination, count, pad);

#if defined(__SSE2__)
#define SSE_LOAD(p) _mm_load_si128((const __m128i *)(p))
#define SSE_STORE(p, v) _mm_store_si128((__m128i *)(p), (v))
ALWAYS_INLINE void box_pass(const uint16_t *restrict source, uint16_t *restrict destination,
                            int count, int pad, int radius) {
    BOX_PASS_BODY(__m128i, 8, SSE_LOAD, SSE_STORE, _mm_set1_epi16, _mm_add_epi16, _mm_sub_epi16, _mm_mulhi_epu16)
}
#else
typedef struct { uint16_t v[8]; } lanes8;
ALWAYS_INLINE lanes8 l8_load(const uint16_t *p) { lanes8 r; memcpy(r.v, p, 16); return r; }
ALWAYS_INLINE void l8_store(uint16_t *p, lanes8 a) { memcpy(p, a.v, 16); }
ALWAYS_INLINE lanes8 l8_set1(short x) { lanes8 r; for (int i = 0; i < 8; i++) r.v[i] = (uint16_t)x; return r; }
ALWAYS_INLINE lanes8 l8_add(lanes8 a, lanes8 b) { for (int i = 0; i < 8; i++) a.v[i] = (uint16_t)(a.v[i] + b.v[i]); return a; }
ALWAYS_INLINE lanes8 l8_sub(lanes8 a, lanes8 b) { for (int i = 0; i < 8; i++) a.v[i] = (uint16_t)(a.v[i] - b.v[i]); return a; }
ALWAYS_INLINE lanes8 l8_mulhi(lanes8 a, lanes8 b) {
    for (int i = 0; i < 8; i++) a.v[i] = (uint16_t)(((uint32_t)a.v[i] * b.v[i]) >> 16);
    return a;
}
ALWAYS_INLINE void box_pass(const uint16_t *restrict source, uint16_t *restrict destination,
                            int count, int pad, int radius) {
    BOX_PASS_BODY(lanes8, 8, l8_load, l8_store, l8_set1, l8_add, l8_sub, l8_mulhi)
}
#endif

#if IK_HAS_AVX2_DISPATCH
#include <immintrin.h>
#define AVX_LOAD(p) _mm256_load_si256((const __m256i *)(p))
#define AVX_STORE(p, v) _mm256_store_si256((__m256i *)(p), (v))
IK_AVX2 ALWAYS_INLINE void box_pass_avx2(const uint16_t *restrict source, uint16_t *restrict destination,
                                         int count, int pad, int radius) {
    BOX_PASS_BODY(__m256i, 16, AVX_LOAD, AVX_STORE, _mm256_set1_epi16, _mm256_add_epi16, _mm256_sub_epi16,
                  _mm256_mulhi_epu16)
}
#endif

/// The passes over `line` (margins not yet filled); returns the buffer holding the result
/// (`line` or `temp`).
#define BLUR_LINE_BODY(PASS)                                                                      \
    replicate_edges(line, count, pad);                                                            \
    uint16_t *source = line, *destination = temp;                                                 \
    for (int r = 0; r < radius_count; r++) {                                                      \
        if (radii[r] <= 0) continue;                                                              \
        PASS(source, destination, count, pad, radii[r]);                                          \
        uint16_t *swap = source;                                                                  \
        source = destination;                                                                     \
        destination = swap;                                                                       \
    }                                                                                             \
    return source;

static uint16_t *blur_line_default(uint16_t *line, uint16_t *temp, int count, int pad, const int *radii,
                                   int radius_count) {
    BLUR_LINE_BODY(box_pass)
}

#if IK_HAS_AVX2_DISPATCH
IK_AVX2 static uint16_t *blur_line_avx2(uint16_t *line, uint16_t *temp, int count, int pad, const int *radii,
                                        int radius_count) {
    BLUR_LINE_BODY(box_pass_avx2)
}
#endif

// MARK: - Moving pixels in and out

/// `value × alpha / 255`, rounded, for 16-bit lanes holding values ≤ 255.
ALWAYS_INLINE uint16_t multiply_by_alpha(uint32_t value, uint32_t alpha) {
    uint32_t product = value * alpha + 128;
    return (uint16_t)((product + (product >> 8)) >> 8);
}

#if defined(__SSE2__)
/// Premultiplies two pixels held as eight 16-bit lanes (alpha lanes unchanged).
ALWAYS_INLINE __m128i premultiply_pair(__m128i v) {
    __m128i alpha = _mm_shufflehi_epi16(_mm_shufflelo_epi16(v, 0xFF), 0xFF);
    __m128i product = _mm_add_epi16(_mm_mullo_epi16(v, alpha), _mm_set1_epi16(128));
    product = _mm_srli_epi16(_mm_add_epi16(product, _mm_srli_epi16(product, 8)), 8);
    const __m128i alpha_lanes = _mm_set_epi16(-1, 0, 0, 0, -1, 0, 0, 0);
    return _mm_or_si128(_mm_and_si128(alpha_lanes, v), _mm_andnot_si128(alpha_lanes, product));
}

/// Widens 16 bytes (4 pixels) to 16-bit lanes, premultiplied if asked, and stores them.
ALWAYS_INLINE void store_widened(uint16_t *destination, __m128i pixels, int premultiply) {
    const __m128i zero = _mm_setzero_si128();
    __m128i low = _mm_unpacklo_epi8(pixels, zero), high = _mm_unpackhi_epi8(pixels, zero);
    if (premultiply) {
        low = premultiply_pair(low);
        high = premultiply_pair(high);
    }
    _mm_storeu_si128((__m128i *)destination, low);
    _mm_storeu_si128((__m128i *)(destination + 8), high);
}
#endif

/// Pixel x of each of the 16 rows into position pad + x of the line (rows past the last repeat it).
static void gather_rows(uint16_t *line, int pad, const uint8_t *const *rows, int width, int premultiply) {
    uint16_t *base = line + (size_t)pad * LANES;
    int x = 0;
#if defined(__SSE2__)
    for (; x + 4 <= width; x += 4) {
        for (int j = 0; j < ROWS_PER_BLOCK; j += 4) {
            __m128i a0 = _mm_loadu_si128((const __m128i *)(rows[j] + 4 * x));
            __m128i a1 = _mm_loadu_si128((const __m128i *)(rows[j + 1] + 4 * x));
            __m128i a2 = _mm_loadu_si128((const __m128i *)(rows[j + 2] + 4 * x));
            __m128i a3 = _mm_loadu_si128((const __m128i *)(rows[j + 3] + 4 * x));
            __m128i t0 = _mm_unpacklo_epi32(a0, a1), t1 = _mm_unpacklo_epi32(a2, a3);
            __m128i t2 = _mm_unpackhi_epi32(a0, a1), t3 = _mm_unpackhi_epi32(a2, a3);
            uint16_t *d = base + (size_t)x * LANES + j * 4;
            store_widened(d, _mm_unpacklo_epi64(t0, t1), premultiply);
            store_widened(d + LANES, _mm_unpackhi_epi64(t0, t1), premultiply);
            store_widened(d + 2 * LANES, _mm_unpacklo_epi64(t2, t3), premultiply);
            store_widened(d + 3 * LANES, _mm_unpackhi_epi64(t2, t3), premultiply);
        }
    }
#endif
    for (; x < width; x++) {
        uint16_t *d = base + (size_t)x * LANES;
        for (int j = 0; j < ROWS_PER_BLOCK; j++) {
            const uint8_t *p = rows[j] + 4 * x;
            uint32_t alpha = p[3];
            for (int c = 0; c < 3; c++) d[j * 4 + c] = premultiply ? multiply_by_alpha(p[c], alpha) : p[c];
            d[j * 4 + 3] = (uint16_t)alpha;
        }
    }
}

/// Position pad + x of the line back into pixel x of the first `row_count` rows.
static void scatter_rows(const uint16_t *line, int pad, uint8_t *const *rows, int row_count, int width) {
    const uint16_t *base = line + (size_t)pad * LANES;
    int x = 0;
#if defined(__SSE2__)
    if (row_count == ROWS_PER_BLOCK) {
        for (; x + 4 <= width; x += 4) {
            for (int j = 0; j < ROWS_PER_BLOCK; j += 4) {
                const uint16_t *s = base + (size_t)x * LANES + j * 4;
                __m128i p[4];
                for (int k = 0; k < 4; k++) {
                    const uint16_t *position = s + (size_t)k * LANES;
                    p[k] = _mm_packus_epi16(_mm_loadu_si128((const __m128i *)position),
                                            _mm_loadu_si128((const __m128i *)(position + 8)));
                }
                // p[k] holds pixel x + k of rows j..j+3; transpose back to rows.
                __m128i t0 = _mm_unpacklo_epi32(p[0], p[1]), t1 = _mm_unpacklo_epi32(p[2], p[3]);
                __m128i t2 = _mm_unpackhi_epi32(p[0], p[1]), t3 = _mm_unpackhi_epi32(p[2], p[3]);
                _mm_storeu_si128((__m128i *)(rows[j] + 4 * x), _mm_unpacklo_epi64(t0, t1));
                _mm_storeu_si128((__m128i *)(rows[j + 1] + 4 * x), _mm_unpackhi_epi64(t0, t1));
                _mm_storeu_si128((__m128i *)(rows[j + 2] + 4 * x), _mm_unpacklo_epi64(t2, t3));
                _mm_storeu_si128((__m128i *)(rows[j + 3] + 4 * x), _mm_unpackhi_epi64(t2, t3));
            }
        }
    }
#endif
    for (; x < width; x++) {
        const uint16_t *s = base + (size_t)x * LANES;
        for (int j = 0; j < row_count; j++) {
            uint8_t *p = rows[j] + 4 * x;
            for (int c = 0; c < 4; c++) p[c] = (uint8_t)(s[j * 4 + c] > 255 ? 255 : s[j * 4 + c]);
        }
    }
}

// MARK: - Entry point

ik_status ik_box_blur_rgba(const uint8_t *source, size_t source_stride, uint8_t *destination,
                           size_t destination_stride, int width, int height, const int *radii,
                           int radius_count, int premultiply) {
    if (width <= 0 || height <= 0 || radius_count <= 0) return IK_ERR_INTERNAL;
    int pad = 0;
    for (int r = 0; r < radius_count; r++) {
        if (radii[r] < 0 || radii[r] > 127) return IK_ERR_INTERNAL;
        if (radii[r] > pad) pad = radii[r];
    }
    uint16_t *(*blur)(uint16_t *, uint16_t *, int, int, const int *, int) = blur_line_default;
#if IK_HAS_AVX2_DISPATCH
    if (ik_uses_avx2()) blur = blur_line_avx2;
#endif
    const size_t positions = (size_t)(width > height ? width : height) + 2 * (size_t)pad + 1;
    uint16_t *lines = aligned_alloc(64, positions * LANES * 2 * sizeof(uint16_t));
    if (!lines) return IK_ERR_INTERNAL;
    uint16_t *line = lines, *temp = lines + positions * LANES;

    // Rows, 16 at a time.
    for (int top = 0; top < height; top += ROWS_PER_BLOCK) {
        int count = height - top < ROWS_PER_BLOCK ? height - top : ROWS_PER_BLOCK;
        const uint8_t *in[ROWS_PER_BLOCK];
        uint8_t *out[ROWS_PER_BLOCK];
        for (int j = 0; j < ROWS_PER_BLOCK; j++) {
            int y = top + (j < count ? j : count - 1);
            in[j] = source + (size_t)y * source_stride;
            out[j] = destination + (size_t)y * destination_stride;
        }
        gather_rows(line, pad, in, width, premultiply);
        const uint16_t *result = blur(line, temp, width, pad, radii, radius_count);
        scatter_rows(result, pad, out, count, width);
    }

    // Columns, in strips of 16 pixels.
    const size_t row_bytes = (size_t)width * 4;
    for (size_t offset = 0; offset < row_bytes; offset += LANES) {
        size_t bytes = row_bytes - offset < LANES ? row_bytes - offset : LANES;
        for (int y = 0; y < height; y++) {
            const uint8_t *s = destination + (size_t)y * destination_stride + offset;
            // Each row is a page or more away from the last: ask for rows well ahead.
            if (y + PREFETCH_ROWS < height) __builtin_prefetch(s + PREFETCH_ROWS * destination_stride);
            uint16_t *d = line + (size_t)(pad + y) * LANES;
            size_t i = 0;
            for (; i < bytes; i++) d[i] = s[i];
            for (; i < LANES; i++) d[i] = 0;
        }
        const uint16_t *result = blur(line, temp, height, pad, radii, radius_count);
        for (int y = 0; y < height; y++) {
            uint8_t *d = destination + (size_t)y * destination_stride + offset;
            const uint16_t *s = result + (size_t)(pad + y) * LANES;
            // The division by multiplication can land one level above 255 (wide boxes).
            for (size_t i = 0; i < bytes; i++) d[i] = (uint8_t)(s[i] > 255 ? 255 : s[i]);
            if (premultiply) ik_unpremultiply_row(d, (int)(bytes / 4));
        }
    }
    free(lines);
    return IK_OK;
}
