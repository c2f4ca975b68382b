// Perceptual distance between a reference image and encodings of it: SSIMULACRA2 and DSSIM, the
// metrics autoquality searches with. The reference's half of the work (its colour transform, its
// scales, its blurred means and variances) is done once, so that each encoding tried costs only
// its own half.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ik_quality_metric {
    /// SSIMULACRA2 (libjxl's perceptual metric): 100 is identical, 90 visually lossless, 70 web
    /// quality, lower is worse (it can go below 0).
    IK_QUALITY_SSIMULACRA2 = 0,
    /// DSSIM: 1 / multi-scale SSIM − 1 over CIE L*a*b*; 0 is identical, larger is worse.
    IK_QUALITY_DSSIM = 1,
} ik_quality_metric;

typedef struct ik_quality_reference ik_quality_reference;

/// Prepares `width × height` RGBA8 pixels (straight alpha, composited over mid grey) as the
/// reference of `metric`. NULL when out of memory or smaller than 8 × 8 pixels.
ik_quality_reference *_Nullable ik_quality_reference_create(ik_quality_metric metric,
                                                            const uint8_t *_Nonnull rgba, size_t stride,
                                                            int width, int height);

/// The metric's value for `rgba` (the reference's size, straight alpha) against the reference;
/// NaN when out of memory.
double ik_quality_compare(const ik_quality_reference *_Nonnull reference, const uint8_t *_Nonnull rgba,
                          size_t stride);

/// How much fine detail the reference has: the mean absolute Laplacian of its full-size luma in
/// the metric's space (0 for a flat image). Computed on each call (one pass over the plane).
double ik_quality_reference_detail(const ik_quality_reference *_Nonnull reference);

void ik_quality_reference_free(ik_quality_reference *_Nullable reference);

#ifdef __cplusplus
}
#endif
