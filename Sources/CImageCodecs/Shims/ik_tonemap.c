#include "ik_tonemap.h"

#include <math.h>

static inline float ik_table(const float *table, float position) {
    if (position <= 0) return table[0];
    if (position >= IK_TONEMAP_STEPS) return table[IK_TONEMAP_STEPS];
    int index = (int)position;
    float fraction = position - (float)index;
    return table[index] + (table[index + 1] - table[index]) * fraction;
}

static inline uint8_t ik_encode(const uint8_t *srgb, float value) {
    if (!(value > 0)) return 0;  // also NaN
    if (value >= 1) return 255;
    return srgb[(int)(value * (IK_TONEMAP_SRGB_ENTRIES - 1) + 0.5f)];
}

/// One pixel: code values (clamped to max_code) to RGBA8.
static inline __attribute__((always_inline)) void ik_tonemap_pixel(const ik_tonemap *map, uint32_t cr, uint32_t cg,
                                                                    uint32_t cb, uint32_t ca, int has_alpha,
                                                                    float tone_scale, float alpha_scale,
                                                                    uint8_t *out) {
    const uint32_t max_code = map->max_code;
    if (cr > max_code) cr = max_code;
    if (cg > max_code) cg = max_code;
    if (cb > max_code) cb = max_code;
    float r = map->linear[cr], g = map->linear[cg], b = map->linear[cb];
    if (map->code_gain) {
        uint32_t top = cr > cg ? (cr > cb ? cr : cb) : (cg > cb ? cg : cb);
        float gain = map->code_gain[top];
        r *= gain;
        g *= gain;
        b *= gain;
    } else {
        if (map->hlg) {
            float ys = map->luma[0] * r + map->luma[1] * g + map->luma[2] * b;
            float gain = ik_table(map->hlg_gain, ys * IK_TONEMAP_STEPS);
            r *= gain;
            g *= gain;
            b *= gain;
        }
        float peak = r > g ? (r > b ? r : b) : (g > b ? g : b);
        if (peak > 0) {
            float gain =
                peak >= map->tone_max ? 1.0f / peak : ik_table(map->tone_gain, sqrtf(peak) * tone_scale);
            r *= gain;
            g *= gain;
            b *= gain;
        }
    }
    const float *m = map->matrix;
    out[0] = ik_encode(map->srgb, m[0] * r + m[1] * g + m[2] * b);
    out[1] = ik_encode(map->srgb, m[3] * r + m[4] * g + m[5] * b);
    out[2] = ik_encode(map->srgb, m[6] * r + m[7] * g + m[8] * b);
    if (has_alpha) {
        if (ca > max_code) ca = max_code;
        out[3] = (uint8_t)((float)ca * alpha_scale + 0.5f);
    } else {
        out[3] = 255;
    }
}

void ik_tonemap_rows(const ik_tonemap *map, const uint16_t *src, size_t src_stride, int channels, uint8_t *dst,
                     size_t dst_stride, int width, int height) {
    const float tone_scale = (float)IK_TONEMAP_STEPS / sqrtf(map->tone_max);
    const float alpha_scale = 255.0f / (float)map->max_code;
    for (int y = 0; y < height; y++) {
        const uint16_t *in = src + (size_t)y * src_stride;
        uint8_t *out = dst + (size_t)y * dst_stride;
        // Two loops so that each is specialised for its channel count.
        if (channels == 4) {
            for (int x = 0; x < width; x++, in += 4, out += 4) {
                ik_tonemap_pixel(map, in[0], in[1], in[2], in[3], 1, tone_scale, alpha_scale, out);
            }
        } else {
            for (int x = 0; x < width; x++, in += 3, out += 4) {
                ik_tonemap_pixel(map, in[0], in[1], in[2], 0, 0, tone_scale, alpha_scale, out);
            }
        }
    }
}

void ik_tonemap_rows_reduced(const ik_tonemap *map, const uint16_t *src, size_t src_stride, int channels,
                             int width, int height, int factor, uint8_t *dst, size_t dst_stride) {
    if (factor <= 1) {
        ik_tonemap_rows(map, src, src_stride, channels, dst, dst_stride, width, height);
        return;
    }
    const float tone_scale = (float)IK_TONEMAP_STEPS / sqrtf(map->tone_max);
    const float alpha_scale = 255.0f / (float)map->max_code;
    const int has_alpha = channels == 4;
    const int out_width = (width + factor - 1) / factor, out_height = (height + factor - 1) / factor;
    for (int oy = 0; oy < out_height; oy++) {
        const int y0 = oy * factor, y1 = y0 + factor < height ? y0 + factor : height;
        uint8_t *out = dst + (size_t)oy * dst_stride;
        for (int ox = 0; ox < out_width; ox++, out += 4) {
            const int x0 = ox * factor, x1 = x0 + factor < width ? x0 + factor : width;
            uint64_t sums[4] = {0, 0, 0, 0};
            for (int y = y0; y < y1; y++) {
                const uint16_t *in = src + (size_t)y * src_stride + (size_t)x0 * channels;
                for (int x = x0; x < x1; x++, in += channels) {
                    sums[0] += in[0];
                    sums[1] += in[1];
                    sums[2] += in[2];
                    if (has_alpha) sums[3] += in[3];
                }
            }
            const uint64_t count = (uint64_t)(y1 - y0) * (uint64_t)(x1 - x0);
            const uint64_t half = count / 2;
            ik_tonemap_pixel(map, (uint32_t)((sums[0] + half) / count), (uint32_t)((sums[1] + half) / count),
                             (uint32_t)((sums[2] + half) / count), (uint32_t)((sums[3] + half) / count), has_alpha,
                             tone_scale, alpha_scale, out);
        }
    }
}
