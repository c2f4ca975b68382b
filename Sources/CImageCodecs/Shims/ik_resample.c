// Fixed-point resampling of an RGBA8 bitmap held in memory (see FixedPointResample.swift; the
// streaming float path for decoders is Resampler.swift).
//
// An optional integer box reduction (16-bit column sums of box_y rows, then box_x pixels per
// reduced column) feeds a ring of reduced rows; each output row is filtered vertically from the
// ring into one reduced-width row, then horizontally into the output, so the costlier horizontal
// filter runs on output rows only. Both filters take 14-bit integer weights (precomputed by the
// caller, summing to 1 << 14) and multiply two taps per pmaddwd lane pair: neighbouring pixels'
// channels interleaved for the horizontal filter, two rows' bytes interleaved for the vertical
// one; AVX2 where the processor has it. The intermediate row is 8-bit, as in Pillow. A source that
// is not opaque is premultiplied row by row on the way in and unpremultiplied on the way out.
#include "ik_pixel_loops.h"
#include "ik_box_reduce.h"
#include "ik_pixels.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#define PRECISION 14

ALWAYS_INLINE int32_t load_pair(const int16_t *weights) {
    int32_t pair;
    memcpy(&pair, weights, 4);
    return pair;
}

// MARK: - Horizontal

#if defined(__SSE2__)
/// Taps k… of one output pixel two at a time (and a last odd one), added to `sum`, then the
/// pixel rounded, clamped and stored: the SSE2 filter's whole loop and the AVX2 filter's tail.
ALWAYS_INLINE void finish_pixel(__m128i sum, const uint8_t *p, const int16_t *w, int k, int taps, uint8_t *out) {
    const __m128i zero = _mm_setzero_si128();
    for (; k + 2 <= taps; k += 2) {
        __m128i pixels = _mm_loadl_epi64((const __m128i *)(p + 4 * k));
        // r0 r1 g0 g1 b0 b1 a0 a1, widened: pmaddwd then adds each channel's two taps.
        pixels = _mm_unpacklo_epi8(_mm_unpacklo_epi8(pixels, _mm_srli_si128(pixels, 4)), zero);
        sum = _mm_add_epi32(sum, _mm_madd_epi16(pixels, _mm_set1_epi32(load_pair(w + k))));
    }
    if (k < taps) {
        int32_t one;
        memcpy(&one, p + 4 * k, 4);
        __m128i pixel = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(one), zero), zero);
        sum = _mm_add_epi32(sum, _mm_madd_epi16(pixel, _mm_set1_epi32((uint16_t)w[k])));
    }
    sum = _mm_srai_epi32(sum, PRECISION);
    sum = _mm_packs_epi32(sum, sum);
    int32_t packed = _mm_cvtsi128_si32(_mm_packus_epi16(sum, sum));
    memcpy(out, &packed, 4);
}
#endif


/// `count` output pixels of one row; `weights` has `stride` entries per output pixel.
static void filter_row_default(const uint8_t *restrict row, uint8_t *restrict out, int count, const int32_t *starts,
                               const int32_t *counts, const int16_t *weights, int stride) {
    for (int x = 0; x < count; x++) {
        const uint8_t *p = row + (size_t)starts[x] * 4;
        const int16_t *w = weights + (size_t)x * stride;
        const int taps = counts[x];
#if defined(__SSE2__)
        finish_pixel(_mm_set1_epi32(1 << (PRECISION - 1)), p, w, 0, taps, out + 4 * (size_t)x);
#else
        int32_t sum[4] = {1 << (PRECISION - 1), 1 << (PRECISION - 1), 1 << (PRECISION - 1), 1 << (PRECISION - 1)};
        for (int k = 0; k < taps; k++)
            for (int c = 0; c < 4; c++) sum[c] += p[4 * k + c] * w[k];
        for (int c = 0; c < 4; c++) out[4 * (size_t)x + c] = clamp_byte(sum[c] >> PRECISION);
#endif
    }
}

#if IK_HAS_AVX2_DISPATCH
/// The horizontal weights laid out for filter_row_avx2: per output pixel, `groups` blocks of 32
/// bytes, each four taps as (w0 w1) × 4 | (w2 w3) × 4 int16 pairs, taps past the pixel's count
/// zero. Built once per resize; every row reuses it.
typedef struct {
    __m256i *weights;
    int groups;
} expanded_weights;

IK_AVX2 static int expand_weights(expanded_weights *e, int count, const int32_t *counts, const int16_t *weights, int stride) {
    int most = 1;
    for (int x = 0; x < count; x++) most = counts[x] > most ? counts[x] : most;
    if (most > stride) return -1; // the row padding is sized by the stride
    e->groups = (most + 3) / 4;
    e->weights = aligned_alloc(32, (size_t)count * (size_t)e->groups * sizeof(__m256i));
    if (!e->weights) return -1;
    for (int x = 0; x < count; x++) {
        const int16_t *w = weights + (size_t)x * stride;
        for (int g = 0; g < e->groups; g++) {
            int16_t four[4];
            for (int t = 0; t < 4; t++) four[t] = 4 * g + t < counts[x] ? w[4 * g + t] : 0;
            int32_t low, high;
            memcpy(&low, four, 4);
            memcpy(&high, four + 2, 4);
            e->weights[(size_t)x * e->groups + g] = _mm256_set_epi32(high, high, high, high, low, low, low, low);
        }
    }
    return 0;
}

/// Four taps of one output pixel: pixels k…k+3 read as one 16-byte load into both halves, one
/// byte shuffle lays (0,1) and (2,3) out as interleaved 16-bit channels, one pmaddwd.
#define IK_TAPS4(sum, p, w)                                                                                     \
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_shuffle_epi8(                                          \
              _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p))), spread), (w)))

/// As filter_row_default with the weights from expand_weights: every pixel runs `groups` steps of
/// four taps (zero weights past its count; the row must be readable 4 × groups pixels past its
/// end), two output pixels per iteration, their sums rounded, packed and stored together.
IK_AVX2 static void filter_row_avx2(const uint8_t *restrict row, uint8_t *restrict out, int count,
                                    const int32_t *starts, const expanded_weights *e) {
    // Low half: pixels 0 and 1 → r0 r1 g0 g1 b0 b1 a0 a1 as 16-bit; high half: pixels 2 and 3.
    const __m256i spread = _mm256_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1,
                                            8, -1, 12, -1, 9, -1, 13, -1, 10, -1, 14, -1, 11, -1, 15, -1);
    const __m256i rounding = _mm256_set1_epi32(1 << (PRECISION - 1));
    const int groups = e->groups;
    int x = 0;
    for (; x + 2 <= count; x += 2) {
        const uint8_t *p = row + (size_t)starts[x] * 4, *q = row + (size_t)starts[x + 1] * 4;
        const __m256i *w = e->weights + (size_t)x * groups, *v = w + groups;
        __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
        for (int g = 0; g < groups; g++) {
            IK_TAPS4(a, p + 16 * g, w[g]);
            IK_TAPS4(b, q + 16 * g, v[g]);
        }
        // [a.lo b.lo] + [a.hi b.hi] = [a b]: each pixel's four channels in one half.
        __m256i sum = _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
        sum = _mm256_srai_epi32(_mm256_add_epi32(sum, rounding), PRECISION);
        sum = _mm256_packus_epi16(_mm256_packs_epi32(sum, sum), _mm256_setzero_si256());
        int32_t first = _mm256_extract_epi32(sum, 0), second = _mm256_extract_epi32(sum, 4);
        memcpy(out + 4 * (size_t)x, &first, 4);
        memcpy(out + 4 * (size_t)x + 4, &second, 4);
    }
    for (; x < count; x++) {
        const uint8_t *p = row + (size_t)starts[x] * 4;
        const __m256i *w = e->weights + (size_t)x * groups;
        __m256i a = _mm256_setzero_si256();
        for (int g = 0; g < groups; g++) IK_TAPS4(a, p + 16 * g, w[g]);
        __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        sum = _mm_srai_epi32(_mm_add_epi32(sum, _mm_set1_epi32(1 << (PRECISION - 1))), PRECISION);
        sum = _mm_packus_epi16(_mm_packs_epi32(sum, sum), sum);
        int32_t packed = _mm_cvtsi128_si32(sum);
        memcpy(out + 4 * (size_t)x, &packed, 4);
    }
}
#endif

// MARK: - Vertical

/// One output row from `taps` rows of `bytes` bytes each. The weight pairs are broadcast once per
/// row, not once per block, and an odd last tap is paired with itself at weight 0, so the inner
/// loop has no branch (a scalar weight load and test per block once took most of its time). More
/// pairs than the stack holds (a filter no resize here asks for) go to the heap.
#define VERTICAL_STACK_PAIRS 64
#define VERTICAL_BODY(VEC, BYTES, LOADU, STOREU, SETZERO, SET1_32, UNPACKLO8, UNPACKHI8, MADD, ADD32, SRAI32,     \
                      PACKS32, PACKUS16)                                                                           \
    size_t i = 0;                                                                                                  \
    const VEC zero = SETZERO();                                                                                    \
    const VEC rounding = SET1_32(1 << (PRECISION - 1));                                                            \
    const int pairs = (taps + 1) / 2;                                                                              \
    VEC stack_weights[VERTICAL_STACK_PAIRS];                                                                       \
    const uint8_t *stack_rows[2 * VERTICAL_STACK_PAIRS];                                                           \
    const int on_heap = pairs > VERTICAL_STACK_PAIRS;                                                              \
    VEC *pair_weights = on_heap ? aligned_alloc(sizeof(VEC), (size_t)pairs * sizeof(VEC)) : stack_weights;         \
    const uint8_t **pair_rows = on_heap ? malloc((size_t)pairs * 2 * sizeof(uint8_t *)) : stack_rows;              \
    if (pair_weights && pair_rows) {                                                                               \
        for (int k = 0; k < pairs; k++) {                                                                          \
            const int odd = 2 * k + 1 >= taps;                                                                     \
            int16_t two[2] = {weights[2 * k], odd ? (int16_t)0 : weights[2 * k + 1]};                              \
            int32_t packed;                                                                                        \
            memcpy(&packed, two, 4);                                                                               \
            pair_weights[k] = SET1_32(packed);                                                                     \
            pair_rows[2 * k] = rows[2 * k];                                                                        \
            pair_rows[2 * k + 1] = odd ? rows[2 * k] : rows[2 * k + 1];                                            \
        }                                                                                                          \
        for (; i + BYTES <= bytes; i += BYTES) {                                                                   \
            VEC s0 = rounding, s1 = rounding, s2 = rounding, s3 = rounding;                                        \
            for (int k = 0; k < pairs; k++) {                                                                      \
                VEC a = LOADU(pair_rows[2 * k] + i), b = LOADU(pair_rows[2 * k + 1] + i), c = pair_weights[k];     \
                VEC low = UNPACKLO8(a, b), high = UNPACKHI8(a, b);                                                 \
                s0 = ADD32(s0, MADD(UNPACKLO8(low, zero), c));                                                     \
                s1 = ADD32(s1, MADD(UNPACKHI8(low, zero), c));                                                     \
                s2 = ADD32(s2, MADD(UNPACKLO8(high, zero), c));                                                    \
                s3 = ADD32(s3, MADD(UNPACKHI8(high, zero), c));                                                    \
            }                                                                                                      \
            VEC first = PACKS32(SRAI32(s0, PRECISION), SRAI32(s1, PRECISION));                                    \
            VEC second = PACKS32(SRAI32(s2, PRECISION), SRAI32(s3, PRECISION));                                    \
            STOREU(out + i, PACKUS16(first, second));                                                              \
        }                                                                                                          \
    }                                                                                                              \
    if (on_heap) {                                                                                                 \
        free(pair_weights);                                                                                        \
        free(pair_rows);                                                                                           \
    }                                                                                                              \
    /* The tail, and every byte when the heap refused: one byte at a time. */                                      \
    for (; i < bytes; i++) {                                                                                       \
        int32_t sum = 1 << (PRECISION - 1);                                                                        \
        for (int k = 0; k < taps; k++) sum += rows[k][i] * weights[k];                                            \
        out[i] = clamp_byte(sum >> PRECISION);                                                                     \
    }

#if defined(__SSE2__)
#define SSE_LOADU(p) _mm_loadu_si128((const __m128i *)(p))
#define SSE_STOREU(p, v) _mm_storeu_si128((__m128i *)(p), (v))
static void filter_column_default(const uint8_t *const *rows, int taps, const int16_t *weights, uint8_t *out,
                                  size_t bytes) {
    VERTICAL_BODY(__m128i, 16, SSE_LOADU, SSE_STOREU, _mm_setzero_si128, _mm_set1_epi32, _mm_unpacklo_epi8,
                  _mm_unpackhi_epi8, _mm_madd_epi16, _mm_add_epi32, _mm_srai_epi32, _mm_packs_epi32, _mm_packus_epi16)
}
#else
static void filter_column_default(const uint8_t *const *rows, int taps, const int16_t *weights, uint8_t *out,
                                  size_t bytes) {
    for (size_t i = 0; i < bytes; i++) {
        int32_t sum = 1 << (PRECISION - 1);
        for (int k = 0; k < taps; k++) sum += rows[k][i] * weights[k];
        out[i] = clamp_byte(sum >> PRECISION);
    }
}
#endif

#if IK_HAS_AVX2_DISPATCH
#define AVX_LOADU(p) _mm256_loadu_si256((const __m256i *)(p))
#define AVX_STOREU(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
// The unpacks and packs work within 128-bit halves; a pack undoes its unpack, so the bytes come
// back in place.
IK_AVX2 static void filter_column_avx2(const uint8_t *const *rows, int taps, const int16_t *weights, uint8_t *out,
                                       size_t bytes) {
    VERTICAL_BODY(__m256i, 32, AVX_LOADU, AVX_STOREU, _mm256_setzero_si256, _mm256_set1_epi32, _mm256_unpacklo_epi8,
                  _mm256_unpackhi_epi8, _mm256_madd_epi16, _mm256_add_epi32, _mm256_srai_epi32, _mm256_packs_epi32,
                  _mm256_packus_epi16)
}
#endif

// MARK: - Entry point

ik_status ik_resample_rgba(const uint8_t *source, size_t source_stride, int src_w, int src_h, int box_x, int box_y,
                           uint8_t *destination, size_t destination_stride, int dst_w, int dst_h,
                           const int32_t *h_starts, const int32_t *h_counts, const int16_t *h_weights, int h_stride,
                           const int32_t *v_starts, const int32_t *v_counts, const int16_t *v_weights, int v_stride,
                           int premultiply) {
    if (src_w <= 0 || src_h <= 0 || dst_w <= 0 || dst_h <= 0 || box_x <= 0 || box_y <= 0 || box_y > 257 ||
        v_stride <= 0 || h_stride <= 0)
        return IK_ERR_INTERNAL;
    const int reduced_w = (src_w + box_x - 1) / box_x;
    const size_t reduced_bytes = (size_t)reduced_w * 4;
    const int boxed = box_x > 1 || box_y > 1;
    // Vertical first, over a ring of reduced rows (the filter windows move down monotonically and
    // span at most v_stride rows), then horizontal: the horizontal filter, the costlier one per
    // pixel, then runs on output rows only.
    const int ring_rows = v_stride;
    uint8_t *ring = malloc(reduced_bytes * (size_t)ring_rows);
    const uint8_t **ring_rows_at = calloc((size_t)ring_rows, sizeof(uint8_t *));
    // The AVX2 horizontal filter runs every pixel over the widest pixel's taps, rounded up to 4
    // (zero weights past its own): a pixel at the right edge reads up to that many pixels past
    // the row, so the row has that much readable (zeroed) room after it.
    const size_t row_padding = 16 * (((size_t)h_stride + 3) / 4) + 16;
    uint8_t *column = calloc(1, reduced_bytes + row_padding);
    const uint8_t **taps = malloc(sizeof(uint8_t *) * (size_t)v_stride);
    ik_box_reducer r = {source, source_stride, src_w, src_h, box_x, box_y, reduced_w, premultiply,
                 premultiply && boxed ? malloc((size_t)src_w * 8) : NULL,
                 boxed ? malloc((size_t)src_w * 4 * sizeof(uint16_t)) : NULL};
    ik_status status = IK_OK;
#if IK_HAS_AVX2_DISPATCH
    expanded_weights expanded = {NULL, 0};
#endif
    if (!ring || !ring_rows_at || !column || !taps || (premultiply && boxed && !r.premultiplied) || (boxed && !r.sums)) {
        status = IK_ERR_INTERNAL;
        goto done;
    }

    void (*filter_column)(const uint8_t *const *, int, const int16_t *, uint8_t *, size_t) = filter_column_default;
#if IK_HAS_AVX2_DISPATCH
    const int avx2 = ik_uses_avx2();
    if (avx2) {
        filter_column = filter_column_avx2;
        if (expand_weights(&expanded, dst_w, h_counts, h_weights, h_stride) != 0) {
            status = IK_ERR_INTERNAL;
            goto done;
        }
    }
#endif
    int produced = 0;
    for (int y = 0; y < dst_h; y++) {
        const int first = v_starts[y], count = v_counts[y];
        if (count > ring_rows || first < produced - ring_rows) {
            status = IK_ERR_INTERNAL;
            goto done;
        }
        for (; produced < first + count; produced++) {
            uint8_t *slot = ring + (size_t)(produced % ring_rows) * reduced_bytes;
            ring_rows_at[produced % ring_rows] = ik_reduced_row(&r, produced, slot);
        }
        for (int k = 0; k < count; k++) taps[k] = ring_rows_at[(first + k) % ring_rows];
        filter_column(taps, count, v_weights + (size_t)y * v_stride, column, reduced_bytes);
        uint8_t *out = destination + (size_t)y * destination_stride;
#if IK_HAS_AVX2_DISPATCH
        if (avx2)
            filter_row_avx2(column, out, dst_w, h_starts, &expanded);
        else
#endif
            filter_row_default(column, out, dst_w, h_starts, h_counts, h_weights, h_stride);
        if (premultiply) ik_unpremultiply_row(out, dst_w);
    }

done:
#if IK_HAS_AVX2_DISPATCH
    free(expanded.weights);
#endif
    free(ring);
    free(ring_rows_at);
    free(column);
    free(taps);
    free(r.premultiplied);
    free(r.sums);
    return status;
}
