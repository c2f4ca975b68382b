// SSIMULACRA2 and DSSIM over float planes (see ik_quality.h).
//
// Both metrics share one skeleton: linear light, halved up to five times (2 × 2 means in linear
// light), each scale taken into the metric's colour space and compared through Gaussian-blurred
// means, variances and covariance (σ = 1.5, 11 taps; zeros beyond the left and right edges,
// mirrored rows beyond the top and bottom, as PyPI's ssimulacra2 does). The
// reference keeps, per scale, its planes, their means and their blurred squares; a comparison computes
// the other image's half and the maps, accumulating in double.
//
// SSIMULACRA2 follows the published algorithm (Jon Sneyers, libjxl tools/ssimulacra2): XYB made
// positive, six scales, an SSIM-like map without the luminance denominator plus edge maps of
// ringing and of lost detail, each averaged as a mean and a 4-norm, weighted by the published
// 108 weights and mapped onto 0–100 by its published polynomial. DSSIM: L*a*b* (D65), five
// scales weighted as in multi-scale SSIM (Wang et al. 2003), channel weights 0.6/0.2/0.2,
// reported as 1 / SSIM − 1 in the manner of kornelski's dssim.
#include "ik_quality.h"
#include "ik_pixels.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RADIUS 5
#define TAPS (2 * RADIUS + 1)
#define MAX_SCALES 6

typedef struct quality_scale {
    int width, height;
    float *storage;
    /// Per channel: the reference's planes in the metric's space, their blurred means and their
    /// blurred squares (the variance is taken where the other image's is, by the same expression,
    /// so that an image compared with itself scores exactly 100 or 0).
    float *image[3], *mean[3], *square_mean[3];
} quality_scale;

struct ik_quality_reference {
    ik_quality_metric metric;
    int width, height, scale_count;
    float kernel[TAPS];
    quality_scale scales[MAX_SCALES];
    pthread_mutex_t scratch_lock;
    float *scratch;
};

// MARK: - Colour

static float srgb_to_linear_table[256];
static int srgb_table_ready;

static void prepare_srgb_table(void) {
    if (__atomic_load_n(&srgb_table_ready, __ATOMIC_ACQUIRE)) return;
    for (int v = 0; v < 256; v++) {
        double c = v / 255.0;
        srgb_to_linear_table[v] = (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
    }
    __atomic_store_n(&srgb_table_ready, 1, __ATOMIC_RELEASE);
}

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

/// RGBA8 (straight alpha, over mid grey in linear light) into three linear planes.
static void linearize(const uint8_t *rgba, size_t stride, int width, int height, float *planes[3]) {
    const float grey = srgb_to_linear_table[128];
    for (int y = 0; y < height; y++) {
        const uint8_t *row = rgba + (size_t)y * stride;
        size_t offset = (size_t)y * width;
        for (int x = 0; x < width; x++) {
            const uint8_t *pixel = row + 4 * x;
            float alpha = pixel[3] * (1.0f / 255);
            for (int c = 0; c < 3; c++) {
                float value = srgb_to_linear_table[pixel[c]];
                planes[c][offset + x] = pixel[3] == 255 ? value : alpha * value + (1 - alpha) * grey;
            }
        }
    }
}

/// 2 × 2 means (the last row and column of blocks may be partial).
static void halve(float *const in[3], int width, int height, float *out[3]) {
    int out_width = (width + 1) / 2, out_height = (height + 1) / 2;
    for (int c = 0; c < 3; c++) {
        for (int oy = 0; oy < out_height; oy++) {
            int y0 = 2 * oy, y1 = y0 + 1 < height ? y0 + 1 : y0;
            const float *row0 = in[c] + (size_t)y0 * width, *row1 = in[c] + (size_t)y1 * width;
            float *target = out[c] + (size_t)oy * out_width;
            for (int ox = 0; ox < out_width; ox++) {
                int x0 = 2 * ox;
                if (x0 + 1 < width) {
                    float sum = row0[x0] + row0[x0 + 1];
                    target[ox] = y1 != y0 ? (sum + row1[x0] + row1[x0 + 1]) * 0.25f : sum * 0.5f;
                } else {
                    target[ox] = y1 != y0 ? (row0[x0] + row1[x0]) * 0.5f : row0[x0];
                }
            }
        }
    }
}

// MARK: - Kernels

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

typedef struct quality_kernels {
    void (*to_metric_space)(ik_quality_metric, float *[3], size_t);
    void (*blur)(const float *, float *, int, int, const float[TAPS], float *, float *);
    void (*multiply)(const float *, const float *, float *, size_t);
    void (*sum_ssimulacra2)(const float *, const float *, const float *, const float *, const float *, const float *,
                            const float *, size_t, double[6]);
    double (*sum_ssim)(const float *, const float *, const float *, const float *, const float *, size_t);
} quality_kernels;

static quality_kernels kernels(void) {
#if IK_HAS_AVX2_DISPATCH
    static int fma_state = -1;
    int fma = __atomic_load_n(&fma_state, __ATOMIC_RELAXED);
    if (fma < 0) {
        __builtin_cpu_init();
        fma = __builtin_cpu_supports("fma") ? 1 : 0;
        __atomic_store_n(&fma_state, fma, __ATOMIC_RELAXED);
    }
    if (fma && ik_uses_avx2()) {
        return (quality_kernels){to_metric_space_avx2, blur_avx2, multiply_avx2, sum_ssimulacra2_avx2, sum_ssim_avx2};
    }
#endif
    return (quality_kernels){to_metric_space_generic, blur_generic, multiply_generic, sum_ssimulacra2_generic,
                             sum_ssim_generic};
}

// MARK: - Blur

static void make_kernel(float kernel[TAPS]) {
    double sum = 0, values[TAPS];
    for (int k = 0; k < TAPS; k++) {
        double d = k - RADIUS;
        values[k] = exp(-d * d / (2 * 1.5 * 1.5));
        sum += values[k];
    }
    for (int k = 0; k < TAPS; k++) kernel[k] = (float)(values[k] / sum);
}

// MARK: - Reference

static int scale_count_for(ik_quality_metric metric, int width, int height) {
    int limit = metric == IK_QUALITY_SSIMULACRA2 ? 6 : 5, count = 0;
    while (count < limit && width >= 8 && height >= 8) {
        count++;
        width = (width + 1) / 2;
        height = (height + 1) / 2;
    }
    return count;
}

/// Three planes of `count` floats in one allocation (NULL on failure).
static float *alloc_planes(float *planes[3], size_t count) {
    float *storage = malloc(sizeof(float) * count * 3);
    if (!storage) return NULL;
    for (int c = 0; c < 3; c++) planes[c] = storage + count * (size_t)c;
    return storage;
}

ik_quality_reference *ik_quality_reference_create(ik_quality_metric metric, const uint8_t *rgba, size_t stride,
                                                  int width, int height) {
    if (width < 8 || height < 8 || (metric != IK_QUALITY_SSIMULACRA2 && metric != IK_QUALITY_DSSIM)) return NULL;
    prepare_srgb_table();
    quality_kernels k = kernels();
    ik_quality_reference *reference = calloc(1, sizeof *reference);
    if (!reference) return NULL;
    pthread_mutex_init(&reference->scratch_lock, NULL);
    reference->metric = metric;
    reference->width = width;
    reference->height = height;
    reference->scale_count = scale_count_for(metric, width, height);
    make_kernel(reference->kernel);

    size_t full = (size_t)width * height;
    float *linear[3], *halved[3], *square, *row = NULL, *temp = NULL;
    float *linear_storage = alloc_planes(linear, full);
    float *halved_storage = alloc_planes(halved, (size_t)((width + 1) / 2) * ((height + 1) / 2));
    square = malloc(sizeof(float) * full);
    row = malloc(sizeof(float) * ((size_t)width + 2 * RADIUS));
    temp = malloc(sizeof(float) * full);
    int ok = linear_storage && halved_storage && square && row && temp;
    if (ok) linearize(rgba, stride, width, height, linear);

    int scale_width = width, scale_height = height;
    for (int s = 0; ok && s < reference->scale_count; s++) {
        if (s > 0) {
            halve(linear, scale_width, scale_height, halved);
            scale_width = (scale_width + 1) / 2;
            scale_height = (scale_height + 1) / 2;
            for (int c = 0; c < 3; c++) memcpy(linear[c], halved[c], sizeof(float) * scale_width * scale_height);
        }
        quality_scale *scale = &reference->scales[s];
        size_t count = (size_t)scale_width * scale_height;
        scale->width = scale_width;
        scale->height = scale_height;
        scale->storage = malloc(sizeof(float) * count * 9);
        if (!scale->storage) {
            ok = 0;
            break;
        }
        for (int c = 0; c < 3; c++) {
            scale->image[c] = scale->storage + count * (size_t)c;
            scale->mean[c] = scale->storage + count * (size_t)(3 + c);
            scale->square_mean[c] = scale->storage + count * (size_t)(6 + c);
            memcpy(scale->image[c], linear[c], sizeof(float) * count);
        }
        k.to_metric_space(metric, scale->image, count);
        for (int c = 0; c < 3; c++) {
            k.blur(scale->image[c], scale->mean[c], scale_width, scale_height, reference->kernel, row, temp);
            k.multiply(scale->image[c], scale->image[c], square, count);
            k.blur(square, scale->square_mean[c], scale_width, scale_height, reference->kernel, row, temp);
        }
    }
    free(linear_storage), free(halved_storage), free(square), free(row), free(temp);
    if (!ok) {
        ik_quality_reference_free(reference);
        return NULL;
    }
    return reference;
}

void ik_quality_reference_free(ik_quality_reference *reference) {
    if (!reference) return;
    for (int s = 0; s < MAX_SCALES; s++) free(reference->scales[s].storage);
    free(reference->scratch);
    pthread_mutex_destroy(&reference->scratch_lock);
    free(reference);
}

// MARK: - Comparison

static const double ssimulacra2_weights[108] = {
    0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0, 0.0, 0.0004371155730107379, 0.0,
    1.1041726426657346, 0.00066284834129271, 0.00015231632783718752, 0.0, 0.0016406437456599754, 0.0,
    1.8422455520539298, 11.441172603757666, 0.0, 0.0007989109436015163, 0.000176816438078653, 0.0,
    1.8787594979546387, 10.94906990605142, 0.0, 0.0007289346991508072, 0.9677937080626833, 0.0,
    0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053, 0.0004550992113792063, 0.0, 0.0,
    0.0013648766163243398, 0.0, 0.0, 0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
    0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
    225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
    176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408, 0.0, 0.0,
    0.0, 34.77906344483772, 44.835625328877896, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0008680556573291698, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0004179171803251336, 0.0017290828234722833, 0.0, 0.0020827005846636437,
    0.0, 0.0, 8.826982764996862, 23.19243343998926, 0.0, 95.1080498811086, 0.9863978034400682,
    0.9834382792465353, 0.0012286405048278493, 171.2667255897307, 0.9807858872435379, 0.0, 0.0, 0.0,
    0.0005130064588990679, 0.0, 0.00010854057858411537,
};

/// Per scale and channel: SSIMULACRA2's six averages (SSIM map mean and 4-norm; ringing mean and
/// 4-norm; lost detail mean and 4-norm), or DSSIM's mean SSIM in [0].
typedef struct channel_averages {
    double values[6];
} channel_averages;

static channel_averages compare_channel(const quality_kernels *k, ik_quality_metric metric,
                                        const quality_scale *scale, int c, const float *image, const float *mean,
                                        const float *covariance, const float *square_mean) {
    size_t count = (size_t)scale->width * scale->height;
    channel_averages averages = {{0}};
    if (metric == IK_QUALITY_SSIMULACRA2) {
        double sums[6] = {0};
        k->sum_ssimulacra2(scale->image[c], scale->mean[c], scale->square_mean[c], image, mean, covariance, square_mean,
                           count, sums);
        for (int m = 0; m < 6; m++) {
            double mean_value = sums[m] / (double)count;
            averages.values[m] = (m & 1) ? sqrt(sqrt(mean_value)) : mean_value;
        }
    } else {
        averages.values[0] =
            k->sum_ssim(scale->mean[c], scale->square_mean[c], mean, covariance, square_mean, count) / (double)count;
    }
    return averages;
}

static double ssimulacra2_score(const channel_averages averages[MAX_SCALES][3], int scale_count) {
    double sum = 0;
    size_t i = 0;
    for (int c = 0; c < 3; c++) {
        for (int s = 0; s < scale_count; s++) {
            for (int n = 0; n < 2; n++) {
                sum += ssimulacra2_weights[i++] * fabs(averages[s][c].values[n]);
                sum += ssimulacra2_weights[i++] * fabs(averages[s][c].values[2 + n]);
                sum += ssimulacra2_weights[i++] * fabs(averages[s][c].values[4 + n]);
            }
        }
    }
    sum *= 0.9562382616834844;
    sum = 2.326765642916932 * sum - 0.020884521182843837 * sum * sum + 6.248496625763138e-05 * sum * sum * sum;
    return sum > 0 ? 100.0 - 10.0 * pow(sum, 0.6276336467831387) : 100.0;
}

static double dssim_value(const channel_averages averages[MAX_SCALES][3], int scale_count) {
    static const double scale_weights[5] = {0.0448, 0.2856, 0.3001, 0.2363, 0.1333};
    static const double channel_weights[3] = {0.6, 0.2, 0.2};
    double ssim = 0, total = 0;
    for (int s = 0; s < scale_count; s++) {
        double scale_ssim = 0;
        for (int c = 0; c < 3; c++) scale_ssim += channel_weights[c] * averages[s][c].values[0];
        ssim += scale_weights[s] * scale_ssim;
        total += scale_weights[s];
    }
    ssim /= total;
    return ssim > 0 ? 1.0 / ssim - 1.0 : INFINITY;
}

/// The planes one comparison works in, in one allocation: linear (3), halved (3), the image in
/// the metric's space (3), its blurred mean, covariance and square (3), a product and the blur's
/// temporary plane, and the blur's row.
static size_t scratch_floats(int width, int height) {
    size_t full = (size_t)width * height;
    return full * 11 + (size_t)((width + 1) / 2) * ((height + 1) / 2) * 3 + (size_t)width + 2 * RADIUS;
}

static double compare_in(const ik_quality_reference *reference, const uint8_t *rgba, size_t stride, float *scratch) {
    quality_kernels k = kernels();
    int width = reference->width, height = reference->height;
    size_t full = (size_t)width * height, half = (size_t)((width + 1) / 2) * ((height + 1) / 2);
    float *linear[3], *halved[3], *image[3], *blurred[3];
    for (int c = 0; c < 3; c++) {
        linear[c] = scratch + full * (size_t)c;
        image[c] = scratch + full * (size_t)(3 + c);
        blurred[c] = scratch + full * (size_t)(6 + c);
        halved[c] = scratch + full * 11 + half * (size_t)c;
    }
    float *product = scratch + full * 9, *temp = scratch + full * 10, *row = scratch + full * 11 + half * 3;
    channel_averages averages[MAX_SCALES][3];
    linearize(rgba, stride, width, height, linear);
    for (int s = 0; s < reference->scale_count; s++) {
        const quality_scale *scale = &reference->scales[s];
        if (s > 0) {
            halve(linear, reference->scales[s - 1].width, reference->scales[s - 1].height, halved);
            for (int c = 0; c < 3; c++) memcpy(linear[c], halved[c], sizeof(float) * scale->width * scale->height);
        }
        size_t count = (size_t)scale->width * scale->height;
        for (int c = 0; c < 3; c++) memcpy(image[c], linear[c], sizeof(float) * count);
        k.to_metric_space(reference->metric, image, count);
        for (int c = 0; c < 3; c++) {
            float *mean = blurred[0], *covariance = blurred[1], *square_mean = blurred[2];
            k.blur(image[c], mean, scale->width, scale->height, reference->kernel, row, temp);
            k.multiply(image[c], scale->image[c], product, count);
            k.blur(product, covariance, scale->width, scale->height, reference->kernel, row, temp);
            k.multiply(image[c], image[c], product, count);
            k.blur(product, square_mean, scale->width, scale->height, reference->kernel, row, temp);
            averages[s][c] = compare_channel(&k, reference->metric, scale, c, image[c], mean, covariance, square_mean);
        }
    }
    return reference->metric == IK_QUALITY_SSIMULACRA2 ? ssimulacra2_score(averages, reference->scale_count)
                                                       : dssim_value(averages, reference->scale_count);
}

double ik_quality_compare(const ik_quality_reference *reference, const uint8_t *rgba, size_t stride) {
    // A search compares one encoding after another: the reference keeps its scratch between them
    // (a fresh allocation of this size would be mapped and faulted in anew each time). A second
    // comparison running at the same time allocates its own.
    ik_quality_reference *shared = (ik_quality_reference *)reference;
    size_t floats = scratch_floats(reference->width, reference->height);
    if (pthread_mutex_trylock(&shared->scratch_lock) == 0) {
        if (!shared->scratch) shared->scratch = malloc(sizeof(float) * floats);
        double result = shared->scratch ? compare_in(reference, rgba, stride, shared->scratch) : NAN;
        pthread_mutex_unlock(&shared->scratch_lock);
        return result;
    }
    float *scratch = malloc(sizeof(float) * floats);
    if (!scratch) return NAN;
    double result = compare_in(reference, rgba, stride, scratch);
    free(scratch);
    return result;
}
