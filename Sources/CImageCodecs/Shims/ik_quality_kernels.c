// The metrics' loops (ik_quality_kernels.h, compiled twice: SSE2 and AVX2 with FMA, chosen at
// run time) and the row-streamed blur ik_quality.c builds its comparisons from.
#include "ik_pixels.h"
#include "ik_quality_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/// Cube root of x ≥ 0: a bit-level first guess refined by two Halley steps (relative error
/// below 1e-6, far under the metrics' float noise) — cbrtf is several times slower.
ALWAYS_INLINE float cube_root(float x) {
    if (x <= 0) return 0;
    union {
        float f;
        uint32_t u;
    } bits = {x};
    bits.u = bits.u / 3 + 709921077u;
    float y = bits.f;
    for (int step = 0; step < 2; step++) {
        float y3 = y * y * y;
        y = y * (y3 + 2 * x) / (2 * y3 + x);
    }
    return y;
}

#define KERNEL(name) name##_generic
#define KERNEL_ATTR
#include "ik_quality_kernels.h"
#undef KERNEL
#undef KERNEL_ATTR
#if IK_HAS_AVX2_DISPATCH
#define KERNEL(name) name##_avx2
#define KERNEL_ATTR __attribute__((target("avx2,fma")))
#include "ik_quality_kernels.h"
#undef KERNEL
#undef KERNEL_ATTR
#endif

quality_kernels ik_quality_kernels(void) {
#if IK_HAS_AVX2_DISPATCH
    static int fma_state = -1;
    int fma = __atomic_load_n(&fma_state, __ATOMIC_RELAXED);
    if (fma < 0) {
        __builtin_cpu_init();
        fma = __builtin_cpu_supports("fma") ? 1 : 0;
        __atomic_store_n(&fma_state, fma, __ATOMIC_RELAXED);
    }
    if (fma && ik_uses_avx2()) {
        return (quality_kernels){to_metric_space_avx2, blur_across_avx2, blur_down_avx2, multiply_avx2,
                                sum_ssimulacra2_avx2, sum_edges_avx2, sum_ssim_avx2};
    }
#endif
    return (quality_kernels){to_metric_space_generic, blur_across_generic, blur_down_generic, multiply_generic,
                             sum_ssimulacra2_generic, sum_edges_generic, sum_ssim_generic};
}

void ik_quality_make_kernel(float kernel[TAPS]) {
    double sum = 0, values[TAPS];
    for (int k = 0; k < TAPS; k++) {
        double d = k - RADIUS;
        values[k] = exp(-d * d / (2 * 1.5 * 1.5));
        sum += values[k];
    }
    for (int k = 0; k < TAPS; k++) kernel[k] = (float)(values[k] / sum);
}

size_t ik_blur_stream_floats(int width) { return (size_t)width * (3 * TAPS) + (size_t)width + 2 * RADIUS; }

ik_blur_stream ik_blur_stream_make(const quality_kernels *k, const float *kernel, const float *a, const float *b,
                                   int with_square, int width, int height, float *memory) {
    ik_blur_stream stream = {k, kernel, a, b, width, height, with_square, 1 + (b != NULL) + (with_square != 0),
                          {NULL}, NULL, 0};
    for (int i = 0; i < 3; i++) stream.ring[i] = memory + (size_t)width * TAPS * (size_t)i;
    stream.padded = memory + (size_t)width * (3 * TAPS);
    memset(stream.padded, 0, sizeof(float) * RADIUS);
    memset(stream.padded + RADIUS + width, 0, sizeof(float) * RADIUS);
    return stream;
}

void ik_blur_stream_row(ik_blur_stream *stream, int y, float *const out[3]) {
    int width = stream->width, height = stream->height;
    int last = y + RADIUS < height ? y + RADIUS : height - 1;
    float *row = stream->padded + RADIUS;
    for (; stream->next_row <= last; stream->next_row++) {
        size_t offset = (size_t)stream->next_row * width, slot = (size_t)(stream->next_row % TAPS) * width;
        const float *a = stream->a + offset;
        int signal = 0;
        memcpy(row, a, sizeof(float) * width);
        stream->k->blur_across(stream->padded, stream->ring[signal++] + slot, width, stream->kernel);
        if (stream->b) {
            stream->k->multiply(a, stream->b + offset, row, width);
            stream->k->blur_across(stream->padded, stream->ring[signal++] + slot, width, stream->kernel);
        }
        if (stream->with_square) {
            stream->k->multiply(a, a, row, width);
            stream->k->blur_across(stream->padded, stream->ring[signal] + slot, width, stream->kernel);
        }
    }
    // The rows an output needs lie within TAPS consecutive rows, so each is still in its slot.
    int sources[TAPS];
    for (int k = 0; k < TAPS; k++) {
        int source = y + k - RADIUS;
        if (source < 0) source = -source - 1;
        if (source >= height) source = 2 * height - source - 1;
        sources[k] = source % TAPS;
    }
    for (int signal = 0; signal < stream->signals; signal++) {
        const float *rows[TAPS];
        for (int k = 0; k < TAPS; k++) rows[k] = stream->ring[signal] + (size_t)sources[k] * width;
        stream->k->blur_down(rows, out[signal], width, stream->kernel);
    }
}
