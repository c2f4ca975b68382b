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

void ik_tonemap_rows(const ik_tonemap *map, const uint16_t *src, size_t src_stride, int channels, uint8_t *dst,
                     size_t dst_stride, int width, int height) {
    const uint32_t max_code = map->max_code;
    const float alpha_scale = 255.0f / (float)max_code;
    const float tone_scale = (float)IK_TONEMAP_STEPS / sqrtf(map->tone_max);
    const float *m = map->matrix;
    for (int y = 0; y < height; y++) {
        const uint16_t *in = src + (size_t)y * src_stride;
        uint8_t *out = dst + (size_t)y * dst_stride;
        for (int x = 0; x < width; x++, in += channels, out += 4) {
            uint32_t cr = in[0] > max_code ? max_code : in[0];
            uint32_t cg = in[1] > max_code ? max_code : in[1];
            uint32_t cb = in[2] > max_code ? max_code : in[2];
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
                    float gain = peak >= map->tone_max ? 1.0f / peak
                                                       : ik_table(map->tone_gain, sqrtf(peak) * tone_scale);
                    r *= gain;
                    g *= gain;
                    b *= gain;
                }
            }
            out[0] = ik_encode(map->srgb, m[0] * r + m[1] * g + m[2] * b);
            out[1] = ik_encode(map->srgb, m[3] * r + m[4] * g + m[5] * b);
            out[2] = ik_encode(map->srgb, m[6] * r + m[7] * g + m[8] * b);
            if (channels == 4) {
                uint32_t a = in[3] > max_code ? max_code : in[3];
                out[3] = (uint8_t)((float)a * alpha_scale + 0.5f);
            } else {
                out[3] = 255;
            }
        }
    }
}
