// SSIMULACRA2 and DSSIM over float planes (see ik_quality.h).
//
// Both metrics share one skeleton: linear light, halved up to five times (2 × 2 means in linear
// light), each scale taken into the metric's colour space and compared through Gaussian-blurred
// means, variances and covariance (σ = 1.5, 11 taps; zeros beyond the left and right edges,
// mirrored rows beyond the top and bottom, as PyPI's ssimulacra2 does). The
// reference keeps, per scale, its planes, their means and their blurred squares; a comparison computes
// the other image's half and the maps a row at a time, accumulating in double.
//
// SSIMULACRA2 follows the published algorithm (Jon Sneyers, libjxl tools/ssimulacra2): XYB made
// positive, six scales, an SSIM-like map without the luminance denominator plus edge maps of
// ringing and of lost detail, each averaged as a mean and a 4-norm, weighted by the published
// 108 weights (those under 0.002 taken as zero, see NEGLIGIBLE_WEIGHT) and mapped onto 0–100 by
// its published polynomial. DSSIM: L*a*b* (D65), five
// scales weighted as in multi-scale SSIM (Wang et al. 2003), channel weights 0.6/0.2/0.2,
// reported as 1 / SSIM − 1 in the manner of kornelski's dssim.
#include "ik_quality_internal.h"
#include "ik_pixels.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SCALES 6

typedef struct quality_scale {
    int width, height;
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
    /// The scales' planes and, after them, one comparison's working memory (`scratch`): one
    /// buffer, from the pool (ik_quality_pool.c).
    float *storage;
    size_t storage_floats;
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

/// RGBA8 (straight alpha, over mid grey in linear light) into three linear planes.
static void linearize(const uint8_t *rgba, size_t stride, int width, int height, float *planes[3]) {
    const float grey = srgb_to_linear_table[128];
    for (int y = 0; y < height; y++) {
        const uint8_t *row = rgba + (size_t)y * stride;
        size_t offset = (size_t)y * width;
        float *restrict r = planes[0] + offset, *restrict g = planes[1] + offset, *restrict b = planes[2] + offset;
        for (int x = 0; x < width; x++) {
            const uint8_t *pixel = row + 4 * x;
            r[x] = srgb_to_linear_table[pixel[0]];
            g[x] = srgb_to_linear_table[pixel[1]];
            b[x] = srgb_to_linear_table[pixel[2]];
            if (pixel[3] != 255) {
                float alpha = pixel[3] * (1.0f / 255);
                r[x] = alpha * r[x] + (1 - alpha) * grey;
                g[x] = alpha * g[x] + (1 - alpha) * grey;
                b[x] = alpha * b[x] + (1 - alpha) * grey;
            }
        }
    }
}

/// 2 × 2 means (the last row and column of blocks may be partial).
static void halve(float *const in[3], int width, int height, float *out[3]) {
    int out_width = (width + 1) / 2, out_height = (height + 1) / 2, pairs = width / 2;
    for (int c = 0; c < 3; c++) {
        for (int oy = 0; oy < out_height; oy++) {
            int y0 = 2 * oy, y1 = y0 + 1 < height ? y0 + 1 : y0;
            const float *restrict row0 = in[c] + (size_t)y0 * width, *restrict row1 = in[c] + (size_t)y1 * width;
            float *restrict target = out[c] + (size_t)oy * out_width;
            // A last row alone is averaged with itself: the same as a 2 × 1 mean.
            for (int ox = 0; ox < pairs; ox++) {
                target[ox] = (row0[2 * ox] + row0[2 * ox + 1] + row1[2 * ox] + row1[2 * ox + 1]) * 0.25f;
            }
            if (pairs < out_width) target[pairs] = (row0[width - 1] + row1[width - 1]) * 0.5f;
        }
    }
}

// MARK: - Reference

static const double ssimulacra2_weights[108];

enum { MAPS_SSIM = 1, MAPS_EDGES = 2 };

/// A published weight at most this small is taken as zero: 26 of them lie between 1e-4 and 0.002
/// (a fit's residue), and keeping them would make a full-size comparison blur X and B besides Y.
/// On 24 pairs (JPEG q20–95, WebP, alpha), scores moved by at most 0.0003.
#define NEGLIGIBLE_WEIGHT 0.002

/// Which maps of channel `c` at scale `s` the score uses. SSIMULACRA2's weights leave the SSIM
/// map or the edge maps, or both, out of many channels and scales (at full size it uses Y alone),
/// and their blurs are not made. DSSIM uses its one map everywhere.
static int maps_needed(ik_quality_metric metric, int scale_count, int c, int s) {
    if (metric != IK_QUALITY_SSIMULACRA2) return MAPS_SSIM;
    // Per channel and scale, as ssimulacra2_score reads them: for the mean, then the 4-norm, the
    // weights of the SSIM map, of ringing and of lost detail.
    const double *w = ssimulacra2_weights + (size_t)(c * scale_count + s) * 6;
    int maps = 0;
    if (w[0] > NEGLIGIBLE_WEIGHT || w[3] > NEGLIGIBLE_WEIGHT) maps |= MAPS_SSIM;
    if (w[1] > NEGLIGIBLE_WEIGHT || w[2] > NEGLIGIBLE_WEIGHT || w[4] > NEGLIGIBLE_WEIGHT || w[5] > NEGLIGIBLE_WEIGHT) {
        maps |= MAPS_EDGES;
    }
    return maps;
}

/// Whether scale `s` uses Y alone (as SSIMULACRA2's full size does): X and B are not converted.
static int luma_only(ik_quality_metric metric, int scale_count, int s) {
    return metric == IK_QUALITY_SSIMULACRA2 && !maps_needed(metric, scale_count, 0, s)
           && !maps_needed(metric, scale_count, 2, s);
}

static int scale_count_for(ik_quality_metric metric, int width, int height) {
    int limit = metric == IK_QUALITY_SSIMULACRA2 ? 6 : 5, count = 0;
    while (count < limit && width >= 8 && height >= 8) {
        count++;
        width = (width + 1) / 2;
        height = (height + 1) / 2;
    }
    return count;
}

/// The planes one comparison works in: the image at the current scale (3 planes) and the next,
/// halved (3 quarter planes; the two alternate), three output rows and the blur's rows.
static size_t scratch_floats(int width, int height) {
    size_t full = (size_t)width * height, half = (size_t)((width + 1) / 2) * ((height + 1) / 2);
    return full * 3 + half * 3 + (size_t)width * 3 + ik_blur_stream_floats(width);
}

/// Mean |4·p − up − down − left − right| over the plane's inner pixels.
static double mean_laplacian(const float *plane, int width, int height) {
    if (width < 3 || height < 3) return 0;
    double sum = 0;
    for (int y = 1; y < height - 1; y++) {
        const float *row = plane + (size_t)y * width;
        float row_sum = 0;
        for (int x = 1; x < width - 1; x++) {
            row_sum += fabsf(4 * row[x] - row[x - 1] - row[x + 1] - row[x - width] - row[x + width]);
        }
        sum += row_sum;
    }
    return sum / ((double)(width - 2) * (height - 2));
}

double ik_quality_reference_detail(const ik_quality_reference *reference) {
    // The full-size luma plane (XYB's Y, L*) is kept in the metric's space for comparisons.
    const quality_scale *full = &reference->scales[0];
    return mean_laplacian(full->image[reference->metric == IK_QUALITY_SSIMULACRA2 ? 1 : 0], full->width, full->height);
}

ik_quality_reference *ik_quality_reference_create(ik_quality_metric metric, const uint8_t *rgba, size_t stride,
                                                  int width, int height) {
    if (width < 8 || height < 8 || (metric != IK_QUALITY_SSIMULACRA2 && metric != IK_QUALITY_DSSIM)) return NULL;
    prepare_srgb_table();
    quality_kernels k = ik_quality_kernels();
    ik_quality_reference *reference = calloc(1, sizeof *reference);
    if (!reference) return NULL;
    pthread_mutex_init(&reference->scratch_lock, NULL);
    reference->metric = metric;
    reference->width = width;
    reference->height = height;
    reference->scale_count = scale_count_for(metric, width, height);
    ik_quality_make_kernel(reference->kernel);

    size_t planes = 0;
    int scale_width = width, scale_height = height;
    for (int s = 0; s < reference->scale_count; s++) {
        reference->scales[s].width = scale_width;
        reference->scales[s].height = scale_height;
        planes += (size_t)scale_width * scale_height * 9;
        scale_width = (scale_width + 1) / 2;
        scale_height = (scale_height + 1) / 2;
    }
    size_t wanted = planes + scratch_floats(width, height);
    reference->storage = ik_quality_buffer_take(wanted, &reference->storage_floats);
    if (!reference->storage) {
        ik_quality_reference_free(reference);
        return NULL;
    }
    reference->scratch = reference->storage + planes;
    float *next = reference->storage;
    for (int s = 0; s < reference->scale_count; s++) {
        quality_scale *scale = &reference->scales[s];
        size_t count = (size_t)scale->width * scale->height;
        for (int c = 0; c < 3; c++) {
            scale->image[c] = next + count * (size_t)c;
            scale->mean[c] = next + count * (size_t)(3 + c);
            scale->square_mean[c] = next + count * (size_t)(6 + c);
        }
        next += count * 9;
    }
    // Each scale is halved from the one before while still linear, then taken into the metric's
    // space in place and blurred.
    linearize(rgba, stride, width, height, reference->scales[0].image);
    float *stream_memory = reference->scratch;
    for (int s = 0; s < reference->scale_count; s++) {
        quality_scale *scale = &reference->scales[s];
        if (s + 1 < reference->scale_count) halve(scale->image, scale->width, scale->height, reference->scales[s + 1].image);
        k.to_metric_space(metric, scale->image, (size_t)scale->width * scale->height,
                          luma_only(metric, reference->scale_count, s));
        for (int c = 0; c < 3; c++) {
            int maps = maps_needed(metric, reference->scale_count, c, s);
            if (!maps) continue;
            ik_blur_stream stream = ik_blur_stream_make(&k, reference->kernel, scale->image[c], NULL, maps & MAPS_SSIM,
                                                  scale->width, scale->height, stream_memory);
            for (int y = 0; y < scale->height; y++) {
                size_t offset = (size_t)y * scale->width;
                float *out[3] = {scale->mean[c] + offset, scale->square_mean[c] + offset, NULL};
                ik_blur_stream_row(&stream, y, out);
            }
        }
    }
    return reference;
}

void ik_quality_reference_free(ik_quality_reference *reference) {
    if (!reference) return;
    ik_quality_buffer_give(reference->storage, reference->storage_floats);
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

/// One channel at one scale: the other image's blurs streamed a row at a time against the
/// reference's, each row summed into the metric's averages.
static channel_averages compare_channel(const quality_kernels *k, const ik_quality_reference *reference,
                                        const quality_scale *scale, int s, int c, const float *image, float *rows,
                                        float *stream_memory) {
    channel_averages averages = {{0}};
    int maps = maps_needed(reference->metric, reference->scale_count, c, s);
    if (!maps) return averages;
    int width = scale->width;
    size_t count = (size_t)width * scale->height;
    float *out[3] = {rows, rows + width, rows + 2 * (size_t)width};
    int ssim = maps & MAPS_SSIM;
    ik_blur_stream stream = ik_blur_stream_make(k, reference->kernel, image, ssim ? scale->image[c] : NULL, ssim, width,
                                          scale->height, stream_memory);
    double sums[6] = {0}, ssim_sum = 0;
    for (int y = 0; y < scale->height; y++) {
        ik_blur_stream_row(&stream, y, out);
        size_t offset = (size_t)y * width;
        if (reference->metric == IK_QUALITY_DSSIM) {
            ssim_sum += k->sum_ssim(scale->mean[c] + offset, scale->square_mean[c] + offset, out[0], out[1], out[2],
                                    (size_t)width);
        } else if (ssim) {
            k->sum_ssimulacra2(scale->image[c] + offset, scale->mean[c] + offset, scale->square_mean[c] + offset,
                               image + offset, out[0], out[1], out[2], (size_t)width, sums);
        } else {
            k->sum_edges(scale->image[c] + offset, scale->mean[c] + offset, image + offset, out[0], (size_t)width, sums);
        }
    }
    if (reference->metric == IK_QUALITY_SSIMULACRA2) {
        for (int m = 0; m < 6; m++) {
            double mean_value = sums[m] / (double)count;
            averages.values[m] = (m & 1) ? sqrt(sqrt(mean_value)) : mean_value;
        }
    } else {
        averages.values[0] = ssim_sum / (double)count;
    }
    return averages;
}

static double compare_in(const ik_quality_reference *reference, const uint8_t *rgba, size_t stride, float *scratch) {
    quality_kernels k = ik_quality_kernels();
    int width = reference->width, height = reference->height;
    size_t full = (size_t)width * height, half = (size_t)((width + 1) / 2) * ((height + 1) / 2);
    // The scales alternate between the full-size planes and the quarter-size ones: each is halved
    // into the other before it is taken into the metric's space in place.
    float *planes[2][3];
    for (int c = 0; c < 3; c++) {
        planes[0][c] = scratch + full * (size_t)c;
        planes[1][c] = scratch + full * 3 + half * (size_t)c;
    }
    float *rows = scratch + full * 3 + half * 3, *stream_memory = rows + (size_t)width * 3;
    channel_averages averages[MAX_SCALES][3];
    linearize(rgba, stride, width, height, planes[0]);
    for (int s = 0; s < reference->scale_count; s++) {
        const quality_scale *scale = &reference->scales[s];
        float **image = planes[s & 1];
        if (s + 1 < reference->scale_count) halve(image, scale->width, scale->height, planes[(s + 1) & 1]);
        k.to_metric_space(reference->metric, image, (size_t)scale->width * scale->height,
                          luma_only(reference->metric, reference->scale_count, s));
        for (int c = 0; c < 3; c++) {
            averages[s][c] = compare_channel(&k, reference, scale, s, c, image[c], rows, stream_memory);
        }
    }
    return reference->metric == IK_QUALITY_SSIMULACRA2 ? ssimulacra2_score(averages, reference->scale_count)
                                                       : dssim_value(averages, reference->scale_count);
}

double ik_quality_compare(const ik_quality_reference *reference, const uint8_t *rgba, size_t stride) {
    // A search compares one encoding after another with the reference's scratch; a second
    // comparison running at the same time takes its own.
    ik_quality_reference *shared = (ik_quality_reference *)reference;
    if (pthread_mutex_trylock(&shared->scratch_lock) == 0) {
        double result = compare_in(reference, rgba, stride, shared->scratch);
        pthread_mutex_unlock(&shared->scratch_lock);
        return result;
    }
    size_t got;
    float *scratch = ik_quality_buffer_take(scratch_floats(reference->width, reference->height), &got);
    if (!scratch) return NAN;
    double result = compare_in(reference, rgba, stride, scratch);
    ik_quality_buffer_give(scratch, got);
    return result;
}
