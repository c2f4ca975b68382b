#include "ik_png.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

// PNG writing with libdeflate: each row gets the filter libpng's heuristic would pick (the one
// whose output bytes, read as signed, have the smallest sum of magnitudes), and the filtered
// rows are compressed in one libdeflate call. Unlike decoding, encoding a row reads only the
// original pixels, so every filter (Paeth included) is a loop the compiler vectorises.

static void ik_put32(unsigned char *p, uint32_t value) {
    p[0] = (unsigned char)(value >> 24);
    p[1] = (unsigned char)(value >> 16);
    p[2] = (unsigned char)(value >> 8);
    p[3] = (unsigned char)value;
}

/// Writes one chunk at `p` (length, type, data, CRC) and returns the bytes written.
static size_t ik_put_chunk(unsigned char *p, const char type[4], const unsigned char *data, size_t length) {
    ik_put32(p, (uint32_t)length);
    memcpy(p + 4, type, 4);
    if (length > 0) memmove(p + 8, data, length);
    ik_put32(p + 8 + length, libdeflate_crc32(0, p + 4, length + 4));
    return length + 12;
}

static size_t ik_cost(const unsigned char *row, size_t length) {
    size_t sum = 0;
    for (size_t i = 0; i < length; i++) sum += (unsigned)abs((int)(signed char)row[i]);
    return sum;
}

static inline unsigned char ik_paeth_predict(int a, int b, int c) {
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
    int nearer = pb < pa ? b : a;
    int distance = pb < pa ? pb : pa;
    return (unsigned char)(pc < distance ? c : nearer);
}

/// Filters `row` (with `prior`, or zeros for the first row) with every filter into `scratch`
/// (5 rows) and copies the cheapest, with its filter byte, to `out`.
static void ik_filter_row(const unsigned char *row, const unsigned char *prior, size_t length, size_t bpp,
                          unsigned char *scratch, unsigned char *out) {
    unsigned char *none = scratch, *sub = scratch + length, *up = scratch + 2 * length, *avg = scratch + 3 * length,
                  *paeth = scratch + 4 * length;
    size_t i;
    memcpy(none, row, length);
    for (i = 0; i < bpp && i < length; i++) {
        int above = prior ? prior[i] : 0;
        sub[i] = row[i];
        up[i] = (unsigned char)(row[i] - above);
        avg[i] = (unsigned char)(row[i] - (above >> 1));
        paeth[i] = (unsigned char)(row[i] - above);  // a = c = 0: the predictor is b
    }
    if (prior) {
        for (i = bpp; i < length; i++) {
            sub[i] = (unsigned char)(row[i] - row[i - bpp]);
            up[i] = (unsigned char)(row[i] - prior[i]);
            avg[i] = (unsigned char)(row[i] - ((row[i - bpp] + prior[i]) >> 1));
            paeth[i] = (unsigned char)(row[i] - ik_paeth_predict(row[i - bpp], prior[i], prior[i - bpp]));
        }
    } else {
        for (i = bpp; i < length; i++) {
            sub[i] = (unsigned char)(row[i] - row[i - bpp]);
            up[i] = row[i];
            avg[i] = (unsigned char)(row[i] - (row[i - bpp] >> 1));
            paeth[i] = sub[i];
        }
    }
    const unsigned char *candidates[5] = {none, sub, up, avg, paeth};
    int best = 0;
    size_t best_cost = ik_cost(none, length);
    for (int filter = 1; filter < 5; filter++) {
        size_t cost = ik_cost(candidates[filter], length);
        if (cost < best_cost) {
            best_cost = cost;
            best = filter;
        }
    }
    out[0] = (unsigned char)best;
    memcpy(out + 1, candidates[best], length);
}

ik_status ik_png_fast_encode(const void *pixels, uint32_t width, uint32_t height, size_t stride, int keep_alpha,
                             int level, void **out_data, size_t *out_size) {
    *out_data = NULL;
    *out_size = 0;
    if (width == 0 || height == 0 || width > 0x7FFFFFFFu || height > 0x7FFFFFFFu) return IK_ERR_DECODE;
    size_t channels = keep_alpha ? 4 : 3;
    size_t length = (size_t)width * channels;
    size_t filtered_size = (size_t)height * (length + 1);
    if (filtered_size / height != length + 1) return IK_ERR_INTERNAL;
    unsigned char *filtered = (unsigned char *)malloc(filtered_size);
    unsigned char *rows = (unsigned char *)malloc(length * 7);  // current, prior, five candidates
    struct libdeflate_compressor *compressor = libdeflate_alloc_compressor(level < 0 ? 6 : level > 12 ? 12 : level);
    if (!filtered || !rows || !compressor) {
        free(filtered);
        free(rows);
        if (compressor) libdeflate_free_compressor(compressor);
        return IK_ERR_INTERNAL;
    }
    unsigned char *current = rows, *prior = rows + length, *scratch = rows + 2 * length;
    const unsigned char *base = (const unsigned char *)pixels;
    for (uint32_t y = 0; y < height; y++) {
        const unsigned char *source = base + (size_t)y * stride;
        if (keep_alpha) {
            memcpy(current, source, length);
        } else {
            for (uint32_t x = 0; x < width; x++) memcpy(current + 3 * (size_t)x, source + 4 * (size_t)x, 3);
        }
        ik_filter_row(current, y == 0 ? NULL : prior, length, channels, scratch, filtered + (size_t)y * (length + 1));
        unsigned char *swap = prior;
        prior = current;
        current = swap;
    }
    free(rows);

    size_t bound = libdeflate_zlib_compress_bound(compressor, filtered_size);
    // Signature, IHDR, IDAT chunks of at most 2^31 - 1 bytes each, IEND.
    size_t chunks = bound / 0x7FFFFFFFu + 1;
    unsigned char *png = (unsigned char *)malloc(8 + 25 + bound + 12 * chunks + 12);
    if (!png) {
        free(filtered);
        libdeflate_free_compressor(compressor);
        return IK_ERR_INTERNAL;
    }
    // Compress straight into place after the IDAT header; chunk headers are inserted after.
    size_t data_start = 8 + 25 + 8;
    size_t compressed = libdeflate_zlib_compress(compressor, filtered, filtered_size, png + data_start, bound);
    free(filtered);
    libdeflate_free_compressor(compressor);
    if (compressed == 0) {
        free(png);
        return IK_ERR_INTERNAL;
    }
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    memcpy(png, signature, 8);
    unsigned char ihdr[13];
    ik_put32(ihdr, width);
    ik_put32(ihdr + 4, height);
    ihdr[8] = 8;
    ihdr[9] = keep_alpha ? 6 : 2;
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    ik_put_chunk(png + 8, "IHDR", ihdr, 13);
    size_t at = 8 + 25;
    if (compressed <= 0x7FFFFFFFu) {
        at += ik_put_chunk(png + at, "IDAT", png + data_start, compressed);
    } else {
        // Larger than one chunk may hold: move the stream out and write it in pieces.
        unsigned char *stream = (unsigned char *)malloc(compressed);
        if (!stream) {
            free(png);
            return IK_ERR_INTERNAL;
        }
        memcpy(stream, png + data_start, compressed);
        for (size_t done = 0; done < compressed;) {
            size_t piece = compressed - done < 0x7FFFFFFFu ? compressed - done : 0x7FFFFFFFu;
            at += ik_put_chunk(png + at, "IDAT", stream + done, piece);
            done += piece;
        }
        free(stream);
    }
    at += ik_put_chunk(png + at, "IEND", NULL, 0);
    *out_data = png;
    *out_size = at;
    return IK_OK;
}
