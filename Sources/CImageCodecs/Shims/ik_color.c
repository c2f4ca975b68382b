// Matrix/TRC colour conversion of RGBA8 pixels to sRGB: three input tables (8-bit code value to
// linear light), a 3x3 matrix (source primaries to sRGB primaries, both D50-adapted as ICC
// profiles store them) and one output table (linear light to the sRGB curve, 1 << 14 entries).
// This is what Little CMS computes for a matrix-shaper pair, without its per-pixel dispatch.

#include "ik_pixel_loops.h"
#include "ik_pixels.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define OUT_MAX ((float)(IK_COLOR_OUT_ENTRIES - 1))

static inline int clamp_index(float v) {
    v = v * OUT_MAX + 0.5f;
    if (!(v > 0.0f)) return 0; // NaN too
    if (v > OUT_MAX) return IK_COLOR_OUT_ENTRIES - 1;
    return (int)v;
}

static void convert_row_scalar(uint8_t *restrict p, int width, const float *restrict lin, const float *restrict m,
                               const uint8_t *restrict out) {
    for (int x = 0; x < width; x++, p += 4) {
        float r = lin[p[0]], g = lin[256 + p[1]], b = lin[512 + p[2]];
        float R = m[0] * r + m[1] * g + m[2] * b;
        float G = m[3] * r + m[4] * g + m[5] * b;
        float B = m[6] * r + m[7] * g + m[8] * b;
        p[0] = out[clamp_index(R)];
        p[1] = out[clamp_index(G)];
        p[2] = out[clamp_index(B)];
    }
}

#if defined(__x86_64__)
// Eight pixels at a time: the table lookups are gathers. The arithmetic is the scalar loop's,
// operation for operation (no FMA), so both give the same bytes.
IK_AVX2 static void convert_row_avx2(uint8_t *restrict p, int width, const float *restrict lin, const float *restrict m,
                                     const int32_t *restrict out32) {
    const __m256i byte = _mm256_set1_epi32(0xFF);
    const __m256 m0 = _mm256_set1_ps(m[0]), m1 = _mm256_set1_ps(m[1]), m2 = _mm256_set1_ps(m[2]);
    const __m256 m3 = _mm256_set1_ps(m[3]), m4 = _mm256_set1_ps(m[4]), m5 = _mm256_set1_ps(m[5]);
    const __m256 m6 = _mm256_set1_ps(m[6]), m7 = _mm256_set1_ps(m[7]), m8 = _mm256_set1_ps(m[8]);
    const __m256 scale = _mm256_set1_ps(OUT_MAX), half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps();
    const __m256 top = _mm256_set1_ps(OUT_MAX);
    int x = 0;
    for (; x + 8 <= width; x += 8, p += 32) {
        __m256i px = _mm256_loadu_si256((const __m256i *)p);
        __m256i ri = _mm256_and_si256(px, byte);
        __m256i gi = _mm256_and_si256(_mm256_srli_epi32(px, 8), byte);
        __m256i bi = _mm256_and_si256(_mm256_srli_epi32(px, 16), byte);
        __m256i alpha = _mm256_andnot_si256(_mm256_set1_epi32(0x00FFFFFF), px);
        __m256 r = _mm256_i32gather_ps(lin, ri, 4);
        __m256 g = _mm256_i32gather_ps(lin + 256, gi, 4);
        __m256 b = _mm256_i32gather_ps(lin + 512, bi, 4);
        __m256 R = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(m0, r), _mm256_mul_ps(m1, g)), _mm256_mul_ps(m2, b));
        __m256 G = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(m3, r), _mm256_mul_ps(m4, g)), _mm256_mul_ps(m5, b));
        __m256 B = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(m6, r), _mm256_mul_ps(m7, g)), _mm256_mul_ps(m8, b));
        // max/min return their second operand for a NaN: the constant.
        R = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(_mm256_mul_ps(R, scale), half), zero), top);
        G = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(_mm256_mul_ps(G, scale), half), zero), top);
        B = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(_mm256_mul_ps(B, scale), half), zero), top);
        __m256i Ro = _mm256_i32gather_epi32(out32, _mm256_cvttps_epi32(R), 4);
        __m256i Go = _mm256_i32gather_epi32(out32, _mm256_cvttps_epi32(G), 4);
        __m256i Bo = _mm256_i32gather_epi32(out32, _mm256_cvttps_epi32(B), 4);
        __m256i result = _mm256_or_si256(_mm256_or_si256(Ro, _mm256_slli_epi32(Go, 8)),
                                         _mm256_or_si256(_mm256_slli_epi32(Bo, 16), alpha));
        _mm256_storeu_si256((__m256i *)p, result);
    }
    for (; x < width; x++, p += 4) {
        float r = lin[p[0]], g = lin[256 + p[1]], b = lin[512 + p[2]];
        float R = m[0] * r + m[1] * g + m[2] * b;
        float G = m[3] * r + m[4] * g + m[5] * b;
        float B = m[6] * r + m[7] * g + m[8] * b;
        p[0] = (uint8_t)out32[clamp_index(R)];
        p[1] = (uint8_t)out32[clamp_index(G)];
        p[2] = (uint8_t)out32[clamp_index(B)];
    }
}

#endif

void ik_color_matrix_trc(uint8_t *pixels, size_t stride, int width, int height, const float *lin, const float *matrix,
                         const uint8_t *out, const int32_t *out32) {
#if defined(__x86_64__)
    if (out32 && ik_uses_avx2()) {
        for (int y = 0; y < height; y++) convert_row_avx2(pixels + (size_t)y * stride, width, lin, matrix, out32);
        return;
    }
#endif
    {
        for (int y = 0; y < height; y++) convert_row_scalar(pixels + (size_t)y * stride, width, lin, matrix, out);
    }
}

void ik_color_lut_rgb(uint8_t *pixels, size_t stride, int width, int height, const uint8_t *table) {
    for (int y = 0; y < height; y++) {
        uint8_t *p = pixels + (size_t)y * stride;
        for (int x = 0; x < width; x++, p += 4) {
            p[0] = table[p[0]];
            p[1] = table[256 + p[1]];
            p[2] = table[512 + p[2]];
        }
    }
}

void ik_expand_to_rgba(const uint8_t *source, uint8_t *destination, int width, int channels) {
    switch (channels) {
    case 1:
        for (int x = 0; x < width; x++) {
            uint8_t v = source[x];
            destination[4 * x] = v; destination[4 * x + 1] = v; destination[4 * x + 2] = v; destination[4 * x + 3] = 255;
        }
        break;
    case 2:
        for (int x = 0; x < width; x++) {
            uint8_t v = source[2 * x];
            destination[4 * x] = v; destination[4 * x + 1] = v; destination[4 * x + 2] = v; destination[4 * x + 3] = source[2 * x + 1];
        }
        break;
    case 3:
        for (int x = 0; x < width; x++) {
            destination[4 * x] = source[3 * x]; destination[4 * x + 1] = source[3 * x + 1];
            destination[4 * x + 2] = source[3 * x + 2]; destination[4 * x + 3] = 255;
        }
        break;
    default:
        for (int x = 0; x < width * 4; x++) destination[x] = source[x];
        break;
    }
}
