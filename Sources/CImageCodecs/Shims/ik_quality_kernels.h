// The loops of ik_quality_kernels.c, included twice by it: once as they are (SSE2) and once
// compiled for AVX2 with FMA, chosen at run time. KERNEL(name) names a copy, KERNEL_ATTR is its
// target.
// Not a public header.

/// Linear planes into the metric's space, in place; with `luma_only` (SSIMULACRA2), Y alone,
/// the other two planes left linear.
KERNEL_ATTR static void KERNEL(to_metric_space)(ik_quality_metric metric, float *planes[3], size_t count,
                                                int luma_only) {
    if (metric == IK_QUALITY_SSIMULACRA2 && luma_only) {
        const float bias = 0.0037930732552754493f;
        const float bias_root = cube_root(bias);
        for (size_t i = 0; i < count; i++) {
            float r = planes[0][i], g = planes[1][i], b = planes[2][i];
            float l = cube_root(0.30f * r + 0.622f * g + 0.078f * b + bias) - bias_root;
            float m = cube_root(0.23f * r + 0.692f * g + 0.078f * b + bias) - bias_root;
            planes[1][i] = 0.5f * (l + m) + 0.01f;
        }
    } else if (metric == IK_QUALITY_SSIMULACRA2) {
        const float bias = 0.0037930732552754493f;
        const float bias_root = cube_root(bias);
        for (size_t i = 0; i < count; i++) {
            float r = planes[0][i], g = planes[1][i], b = planes[2][i];
            float l = 0.30f * r + 0.622f * g + 0.078f * b + bias;
            float m = 0.23f * r + 0.692f * g + 0.078f * b + bias;
            float s = 0.24342268924547819f * r + 0.20476744424496821f * g + 0.55180986650955360f * b + bias;
            l = cube_root(l) - bias_root;
            m = cube_root(m) - bias_root;
            s = cube_root(s) - bias_root;
            float x = 0.5f * (l - m), yy = 0.5f * (l + m);
            planes[0][i] = x * 14.0f + 0.42f;
            planes[1][i] = yy + 0.01f;
            planes[2][i] = (s - yy) + 0.55f;
        }
    } else {
        const float epsilon = 216.0f / 24389.0f, kappa = 24389.0f / 27.0f;
        for (size_t i = 0; i < count; i++) {
            float r = planes[0][i], g = planes[1][i], b = planes[2][i];
            float xyz[3] = {
                (0.4124564f * r + 0.3575761f * g + 0.1804375f * b) / 0.95047f,
                0.2126729f * r + 0.7151522f * g + 0.0721750f * b,
                (0.0193339f * r + 0.1191920f * g + 0.9503041f * b) / 1.08883f,
            };
            float f[3];
            for (int c = 0; c < 3; c++) {
                f[c] = xyz[c] > epsilon ? cube_root(xyz[c]) : (kappa * xyz[c] + 16) / 116;
            }
            planes[0][i] = 1.16f * f[1] - 0.16f;          // L* / 100
            planes[1][i] = 5.0f * (f[0] - f[1]) + 0.5f;   // a* / 100, centred
            planes[2][i] = 2.0f * (f[1] - f[2]) + 0.5f;   // b* / 100, centred
        }
    }
}


/// One row blurred across: `padded` holds the row with RADIUS zeros on either side (the image
/// seen as zeros beyond its left and right edges, as PyPI's ssimulacra2 does).
KERNEL_ATTR static void KERNEL(blur_across)(const float *restrict padded, float *restrict out, int width,
                                            const float kernel[TAPS]) {
    // The kernel is symmetric: pairs of taps share a weight, and each output is one expression.
    const float w0 = kernel[0], w1 = kernel[1], w2 = kernel[2], w3 = kernel[3], w4 = kernel[4], w5 = kernel[5];
    for (int x = 0; x < width; x++) {
        const float *r = padded + x;
        out[x] = w0 * (r[0] + r[10]) + w1 * (r[1] + r[9]) + w2 * (r[2] + r[8]) + w3 * (r[3] + r[7])
                 + w4 * (r[4] + r[6]) + w5 * r[5];
    }
}

/// One output row blurred down from the TAPS rows around it (already blurred across).
KERNEL_ATTR static void KERNEL(blur_down)(const float *const rows[TAPS], float *restrict out, int width,
                                          const float kernel[TAPS]) {
    const float w0 = kernel[0], w1 = kernel[1], w2 = kernel[2], w3 = kernel[3], w4 = kernel[4], w5 = kernel[5];
    const float *restrict r0 = rows[0], *restrict r1 = rows[1], *restrict r2 = rows[2], *restrict r3 = rows[3];
    const float *restrict r4 = rows[4], *restrict r5 = rows[5], *restrict r6 = rows[6], *restrict r7 = rows[7];
    const float *restrict r8 = rows[8], *restrict r9 = rows[9], *restrict r10 = rows[10];
    for (int x = 0; x < width; x++) {
        out[x] = w0 * (r0[x] + r10[x]) + w1 * (r1[x] + r9[x]) + w2 * (r2[x] + r8[x]) + w3 * (r3[x] + r7[x])
                 + w4 * (r4[x] + r6[x]) + w5 * r5[x];
    }
}

KERNEL_ATTR static void KERNEL(multiply)(const float *restrict a, const float *restrict b, float *restrict out, size_t count) {
    for (size_t i = 0; i < count; i++) out[i] = a[i] * b[i];
}


/// The SSIMULACRA2 maps of one channel at one scale, summed: the SSIM-like map and its 4th
/// power, ringing and its 4th power, lost detail and its 4th power. Without `with_ssim` (a channel
/// whose SSIM map the score does not use) the edge maps alone: sums[0] and [1] are left, and the
/// covariance and square means not read. Sums run in float over 16 independent lanes per block of
/// 4096 pixels (so the loop vectorises without reassociation; the last group of a block may be
/// shorter), then in double.
KERNEL_ATTR ALWAYS_INLINE void KERNEL(sum_maps)(const float *restrict reference_image,
                                                const float *restrict reference_mean,
                                                const float *restrict reference_square_mean,
                                                const float *restrict image, const float *restrict mean,
                                                const float *restrict covariance, const float *restrict square_mean,
                                                size_t count, double sums[6], int with_ssim) {
    enum { LANES = 16, BLOCK = 4096 };
    const float c2 = 0.0009f;
    for (size_t start = 0; start < count; start += BLOCK) {
        size_t end = start + BLOCK < count ? start + BLOCK : count;
        float lanes[6][LANES] = {{0}};
        for (size_t i = start; i < end; i += LANES) {
            int n = end - i < LANES ? (int)(end - i) : LANES;
            for (int l = 0; l < n; l++) {
                size_t k = i + l;
                float mu1 = reference_mean[k], mu2 = mean[k];
                if (with_ssim) {
                    float difference = mu1 - mu2;
                    float numerator_m = 1.0f - difference * difference;
                    float numerator_s = 2 * (covariance[k] - mu1 * mu2) + c2;
                    float denominator_s =
                        (reference_square_mean[k] - mu1 * mu1) + (square_mean[k] - mu2 * mu2) + c2;
                    float d = 1.0f - numerator_m * numerator_s / denominator_s;
                    d = d > 0 ? d : 0;
                    float d2 = d * d;
                    lanes[0][l] += d;
                    lanes[1][l] += d2 * d2;
                }
                float edge = (1.0f + fabsf(image[k] - mu2)) / (1.0f + fabsf(reference_image[k] - mu1)) - 1.0f;
                float artifact = edge > 0 ? edge : 0, lost = edge < 0 ? -edge : 0;
                float a2 = artifact * artifact, l2 = lost * lost;
                lanes[2][l] += artifact;
                lanes[3][l] += a2 * a2;
                lanes[4][l] += lost;
                lanes[5][l] += l2 * l2;
            }
        }
        for (int m = with_ssim ? 0 : 2; m < 6; m++) {
            double block = 0;
            for (int l = 0; l < LANES; l++) block += lanes[m][l];
            sums[m] += block;
        }
    }
}

KERNEL_ATTR static void KERNEL(sum_ssimulacra2)(const float *restrict reference_image,
                                                const float *restrict reference_mean,
                                                const float *restrict reference_square_mean, const float *restrict image,
                                                const float *restrict mean, const float *restrict covariance,
                                                const float *restrict square_mean, size_t count, double sums[6]) {
    KERNEL(sum_maps)(reference_image, reference_mean, reference_square_mean, image, mean, covariance, square_mean, count,
                     sums, 1);
}

KERNEL_ATTR static void KERNEL(sum_edges)(const float *restrict reference_image, const float *restrict reference_mean,
                                          const float *restrict image, const float *restrict mean, size_t count,
                                          double sums[6]) {
    KERNEL(sum_maps)(reference_image, reference_mean, NULL, image, mean, NULL, NULL, count, sums, 0);
}

/// The mean SSIM of one channel at one scale (DSSIM), summed as above.
KERNEL_ATTR static double KERNEL(sum_ssim)(const float *restrict reference_mean, const float *restrict reference_square_mean,
                                           const float *restrict mean, const float *restrict covariance,
                                           const float *restrict square_mean, size_t count) {
    enum { LANES = 16, BLOCK = 4096 };
    const float c1 = 0.0001f, c2 = 0.0009f;
    double sum = 0;
    for (size_t start = 0; start < count; start += BLOCK) {
        size_t end = start + BLOCK < count ? start + BLOCK : count;
        float lanes[LANES] = {0};
        for (size_t i = start; i < end; i += LANES) {
            int n = end - i < LANES ? (int)(end - i) : LANES;
            for (int l = 0; l < n; l++) {
                size_t k = i + l;
                float mu1 = reference_mean[k], mu2 = mean[k];
                float luminance = (2 * mu1 * mu2 + c1) / (mu1 * mu1 + mu2 * mu2 + c1);
                float structure = (2 * (covariance[k] - mu1 * mu2) + c2)
                                  / ((reference_square_mean[k] - mu1 * mu1) + (square_mean[k] - mu2 * mu2) + c2);
                lanes[l] += luminance * structure;
            }
        }
        double block = 0;
        for (int l = 0; l < LANES; l++) block += lanes[l];
        sum += block;
    }
    return sum;
}
