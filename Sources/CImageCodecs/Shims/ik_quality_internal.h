// What ik_quality.c shares with its kernels (ik_quality_kernels.c) and its buffer pool
// (ik_quality_pool.c). Not a public header.
#pragma once
#include "ik_quality.h"

#include <stddef.h>

#define RADIUS 5
#define TAPS (2 * RADIUS + 1)

/// The metrics' loops, in the best variant this processor runs (SSE2, or AVX2 with FMA).
typedef struct quality_kernels {
    void (*to_metric_space)(ik_quality_metric, float *[3], size_t, int);
    void (*blur_across)(const float *, float *, int, const float[TAPS]);
    void (*blur_down)(const float *const[TAPS], float *, int, const float[TAPS]);
    void (*multiply)(const float *, const float *, float *, size_t);
    void (*sum_ssimulacra2)(const float *, const float *, const float *, const float *, const float *, const float *,
                            const float *, size_t, double[6]);
    void (*sum_edges)(const float *, const float *, const float *, const float *, size_t, double[6]);
    double (*sum_ssim)(const float *, const float *, const float *, const float *, const float *, size_t);
} quality_kernels;

quality_kernels ik_quality_kernels(void);

/// The Gaussian (σ = 1.5) both metrics blur with, normalised.
void ik_quality_make_kernel(float kernel[TAPS]);

/// The blurs of a plane `a` that the metrics need — its mean, its product with `b` (when `b` is
/// set) and its square (when asked) — made a row at a time: each source row is blurred across
/// once into a ring of TAPS rows per signal, and each output row is blurred down from the ring.
/// Nothing plane-sized is kept in between, so the work stays in cache.
typedef struct ik_blur_stream {
    const quality_kernels *k;
    const float *kernel;
    const float *a, *b;
    int width, height, with_square, signals;
    /// Per signal (a, then a × b when b is set, then a × a when asked): TAPS rows blurred across.
    float *ring[3];
    /// A source row with RADIUS zeros on either side.
    float *padded;
    int next_row;
} ik_blur_stream;

/// Floats of working memory a stream over rows of `width` needs.
size_t ik_blur_stream_floats(int width);

/// A stream over `a` (and `b`), working in `memory` (ik_blur_stream_floats(width) floats).
ik_blur_stream ik_blur_stream_make(const quality_kernels *k, const float *kernel, const float *a, const float *b,
                                   int with_square, int width, int height, float *memory);

/// Output row `y` of each signal into `out` (signals in the order above); rows in order.
void ik_blur_stream_row(ik_blur_stream *stream, int y, float *const out[3]);

/// A buffer of at least `floats` floats (its true size in `*got`), kept from an earlier
/// reference when one fits; NULL when out of memory.
float *ik_quality_buffer_take(size_t floats, size_t *got);

/// Keeps `data` (of `floats` floats, from ik_quality_buffer_take) for a later take when the pool
/// has room, else frees it.
void ik_quality_buffer_give(float *data, size_t floats);
