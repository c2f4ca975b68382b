#include "ik_box_reduce.h"
#include "ik_pixel_loops.h"
#include "ik_pixels.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// Averages 2 × 2 pixels of two rows straight into the reduced row (the common box of a resize
/// to between a third and a quarter): no sums kept between the rows. Returns the columns done.
static int reduce_2x2(const uint8_t *restrict row0, const uint8_t *restrict row1, uint8_t *restrict out,
                      int src_w) {
    int column = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128(), two = _mm_set1_epi16(2);
    for (; 2 * column + 4 <= src_w; column += 2) {
        __m128i a = _mm_loadu_si128((const __m128i *)(row0 + (size_t)column * 8));
        __m128i b = _mm_loadu_si128((const __m128i *)(row1 + (size_t)column * 8));
        __m128i low = _mm_add_epi16(_mm_unpacklo_epi8(a, zero), _mm_unpacklo_epi8(b, zero));
        __m128i high = _mm_add_epi16(_mm_unpackhi_epi8(a, zero), _mm_unpackhi_epi8(b, zero));
        __m128i pairs = _mm_add_epi16(_mm_unpacklo_epi64(low, high), _mm_unpackhi_epi64(low, high));
        pairs = _mm_srli_epi16(_mm_add_epi16(pairs, two), 2);
        _mm_storel_epi64((__m128i *)(out + (size_t)column * 4), _mm_packus_epi16(pairs, pairs));
    }
#endif
    for (; 2 * column + 2 <= src_w; column++) {
        for (int c = 0; c < 4; c++) {
            size_t i = (size_t)column * 8 + c;
            out[(size_t)column * 4 + c] = (uint8_t)((row0[i] + row0[i + 4] + row1[i] + row1[i + 4] + 2) >> 2);
        }
    }
    return column;
}

/// Starts the 16-bit sums with a row's bytes.
static void widen_into_sums(uint16_t *restrict sums, const uint8_t *restrict row, size_t bytes) {
    for (size_t i = 0; i < bytes; i++) sums[i] = row[i];
}

/// Adds a row's bytes to 16-bit sums.
static void add_to_sums(uint16_t *restrict sums, const uint8_t *restrict row, size_t bytes) {
    for (size_t i = 0; i < bytes; i++) sums[i] = (uint16_t)(sums[i] + row[i]);
}

/// Averages the band's columns `box_x` at a time (the last column may be narrower). The sums
/// stay below 2^24, so floats hold them exactly; the quotient is rounded to nearest.
static void reduce_columns(const uint16_t *sums, int src_w, int box_x, int rows, uint8_t *out, int reduced_w) {
    const float regular = 1.0f / (float)(box_x * rows);
    int column = 0;
#if defined(__SSE2__)
    if (box_x == 2) {
        // Two columns (four pixels) per step; pairs of 16-bit sums fit 16 bits (rows ≤ 128).
        const __m128i zero = _mm_setzero_si128();
        const __m128 scale = _mm_set1_ps(regular);
        for (; column + 2 <= reduced_w && 2 * column + 4 <= src_w && rows <= 128; column += 2) {
            __m128i v0 = _mm_loadu_si128((const __m128i *)(sums + (size_t)column * 8));
            __m128i v1 = _mm_loadu_si128((const __m128i *)(sums + (size_t)column * 8 + 8));
            __m128i pairs = _mm_add_epi16(_mm_unpacklo_epi64(v0, v1), _mm_unpackhi_epi64(v0, v1));
            __m128i low = _mm_cvtps_epi32(_mm_mul_ps(_mm_cvtepi32_ps(_mm_unpacklo_epi16(pairs, zero)), scale));
            __m128i high = _mm_cvtps_epi32(_mm_mul_ps(_mm_cvtepi32_ps(_mm_unpackhi_epi16(pairs, zero)), scale));
            __m128i bytes = _mm_packs_epi32(low, high);
            _mm_storel_epi64((__m128i *)(out + (size_t)column * 4), _mm_packus_epi16(bytes, bytes));
        }
    }
#endif
    for (; column < reduced_w; column++) {
        int first = column * box_x;
        int last = first + box_x < src_w ? first + box_x : src_w;
        float scale = last - first == box_x ? regular : 1.0f / (float)((last - first) * rows);
#if defined(__SSE2__)
        const __m128i zero = _mm_setzero_si128();
        __m128i total = zero;
        for (int x = first; x < last; x++)
            total = _mm_add_epi32(total, _mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)(sums + (size_t)x * 4)), zero));
        __m128i quotient = _mm_cvtps_epi32(_mm_mul_ps(_mm_cvtepi32_ps(total), _mm_set1_ps(scale)));
        quotient = _mm_packs_epi32(quotient, quotient);
        int32_t packed = _mm_cvtsi128_si32(_mm_packus_epi16(quotient, quotient));
        memcpy(out + (size_t)column * 4, &packed, 4);
#else
        uint32_t total[4] = {0, 0, 0, 0};
        for (int x = first; x < last; x++)
            for (int c = 0; c < 4; c++) total[c] += sums[(size_t)x * 4 + c];
        for (int c = 0; c < 4; c++) out[(size_t)column * 4 + c] = clamp_byte((int32_t)((float)total[c] * scale + 0.5f));
#endif
    }
}



const uint8_t *ik_reduced_row(const ik_box_reducer *r, int band, uint8_t *out) {
    const int first = band * r->box_y;
    const int rows = first + r->box_y <= r->src_h ? r->box_y : r->src_h - first;
    if (r->box_x == 1 && r->box_y == 1) {
        const uint8_t *row = r->source + (size_t)band * r->source_stride;
        if (!r->premultiply) return row;
        ik_premultiply_row(row, out, r->src_w);
        return out;
    }
    if (r->box_x == 2 && rows == 2 && r->src_w % 2 == 0) {
        const uint8_t *row0 = r->source + (size_t)first * r->source_stride;
        const uint8_t *row1 = row0 + r->source_stride;
        if (r->premultiply) {
            ik_premultiply_row(row0, r->premultiplied, r->src_w);
            ik_premultiply_row(row1, r->premultiplied + (size_t)r->src_w * 4, r->src_w);
            row0 = r->premultiplied;
            row1 = r->premultiplied + (size_t)r->src_w * 4;
        }
        reduce_2x2(row0, row1, out, r->src_w);
        return out;
    }
    for (int y = first; y < first + rows; y++) {
        const uint8_t *row = r->source + (size_t)y * r->source_stride;
        if (r->premultiply) {
            ik_premultiply_row(row, r->premultiplied, r->src_w);
            row = r->premultiplied;
        }
        if (y == first) {
            widen_into_sums(r->sums, row, (size_t)r->src_w * 4);
        } else {
            add_to_sums(r->sums, row, (size_t)r->src_w * 4);
        }
    }
    reduce_columns(r->sums, r->src_w, r->box_x, rows, out, r->reduced_w);
    return out;
}
