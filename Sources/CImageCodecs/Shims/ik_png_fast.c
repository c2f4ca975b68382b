#include "ik_png.h"
#include "ik_png_rows.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The one-shot PNG path: chunks walked and CRC-checked here, the IDAT stream inflated in one call
// by libdeflate, rows unfiltered (SSE2 for 3- and 4-byte pixels) and expanded straight into the
// caller's RGBA8 rows with the transforms of ik_png.c (palette and gray expanded, tRNS to alpha,
// 16-bit samples to their high byte, Adam7 resolved, no gamma).
//
// It handles clean files only. Anything libpng treats specially — a CRC mismatch, a chunk out of
// place, a tRNS libpng would ignore, a filter type over 4, a zlib stream that is damaged, short or
// long — returns IK_PNG_FAST_FALLBACK before or after writing rows, and the caller decodes the
// file with libpng, whose answer (image, warning-only image or typed error) is then the answer.

enum { IK_PNG_FAST_FALLBACK = IK_ERR_UNSUPPORTED };

static uint32_t ik_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

#define IK_TAG(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

// MARK: libdeflate decompressor, one per thread

static pthread_key_t ik_deflate_key;
static pthread_once_t ik_deflate_once = PTHREAD_ONCE_INIT;

static void ik_deflate_free(void *decompressor) { libdeflate_free_decompressor(decompressor); }
static void ik_deflate_make_key(void) { pthread_key_create(&ik_deflate_key, ik_deflate_free); }

static struct libdeflate_decompressor *ik_decompressor(void) {
    pthread_once(&ik_deflate_once, ik_deflate_make_key);
    struct libdeflate_decompressor *decompressor = pthread_getspecific(ik_deflate_key);
    if (!decompressor) {
        decompressor = libdeflate_alloc_decompressor();
        if (decompressor && pthread_setspecific(ik_deflate_key, decompressor) != 0) {
            libdeflate_free_decompressor(decompressor);
            return NULL;
        }
    }
    return decompressor;
}

uint32_t ik_crc32(uint32_t crc, const void *data, size_t size) { return libdeflate_crc32(crc, data, size); }

// MARK: Decode

static int ik_channels(int color_type) {
    switch (color_type) {
    case 0: return 1;
    case 2: return 3;
    case 3: return 1;
    case 4: return 2;
    case 6: return 4;
    default: return 0;
    }
}

static int ik_valid_depth(int color_type, int depth) {
    switch (color_type) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8;
    case 2: case 4: case 6: return depth == 8 || depth == 16;
    default: return 0;
    }
}

static const int ik_adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};

static size_t ik_row_bytes(uint32_t width, int channels, int depth) {
    return ((size_t)width * (size_t)channels * (size_t)depth + 7) / 8;
}

ik_status ik_png_fast_decode(const void *data, size_t size, int check_crc, ik_png_alloc_fn alloc, void *context,
                             ik_png_info *info, char *message, size_t message_size) {
    const unsigned char *bytes = (const unsigned char *)data;
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (message_size > 0) message[0] = 0;
    memset(info, 0, sizeof(*info));
    if (size < 8 + 25 || memcmp(bytes, signature, 8) != 0) return IK_PNG_FAST_FALLBACK;

    // Walk every chunk through IEND, as libpng does (it reads to IEND).
    const unsigned char *ihdr = NULL, *palette = NULL, *trns = NULL;
    uint32_t palette_length = 0, trns_length = 0;
    const unsigned char *first_idat = NULL;
    size_t idat_total = 0, idat_chunks = 0;
    int idat_done = 0, seen_iend = 0;
    size_t offset = 8;
    while (offset + 12 <= size) {
        uint32_t length = ik_be32(bytes + offset);
        uint32_t type = ik_be32(bytes + offset + 4);
        if (length > 0x7FFFFFFFu || length > size - offset - 12) return IK_PNG_FAST_FALLBACK;
        const unsigned char *payload = bytes + offset + 8;
        // libpng rejects a chunk type that is not four ASCII letters.
        for (int i = 4; i < 8; i++) {
            unsigned char letter = (unsigned char)(bytes[offset + i] | 0x20);
            if (letter < 'a' || letter > 'z') return IK_PNG_FAST_FALLBACK;
        }
        int critical = (bytes[offset + 4] & 0x20) == 0;
        if ((critical || type == IK_TAG('t', 'R', 'N', 'S')) && check_crc &&
            libdeflate_crc32(0, bytes + offset + 4, (size_t)length + 4) != ik_be32(payload + length)) {
            return IK_PNG_FAST_FALLBACK;
        }
        if (offset == 8 && type != IK_TAG('I', 'H', 'D', 'R')) return IK_PNG_FAST_FALLBACK;
        switch (type) {
        case IK_TAG('I', 'H', 'D', 'R'):
            if (ihdr || length != 13) return IK_PNG_FAST_FALLBACK;
            ihdr = payload;
            break;
        case IK_TAG('P', 'L', 'T', 'E'):
            if (palette || first_idat || trns || length == 0 || length % 3 != 0 || length > 768) return IK_PNG_FAST_FALLBACK;
            palette = payload;
            palette_length = length;
            break;
        case IK_TAG('t', 'R', 'N', 'S'):
            if (trns || first_idat) return IK_PNG_FAST_FALLBACK;
            trns = payload;
            trns_length = length;
            break;
        case IK_TAG('I', 'D', 'A', 'T'):
            if (idat_done) return IK_PNG_FAST_FALLBACK;
            if (!first_idat) first_idat = payload;
            idat_total += length;
            idat_chunks++;
            break;
        case IK_TAG('I', 'E', 'N', 'D'):
            if (length != 0) return IK_PNG_FAST_FALLBACK;
            seen_iend = 1;
            break;
        case IK_TAG('a', 'c', 'T', 'L'):
        case IK_TAG('f', 'c', 'T', 'L'):
        case IK_TAG('f', 'd', 'A', 'T'):
            return IK_PNG_FAST_FALLBACK;  // APNG: ImageKit's own frame walker handles these
        default:
            if (critical) return IK_PNG_FAST_FALLBACK;
            break;
        }
        if (first_idat && type != IK_TAG('I', 'D', 'A', 'T')) idat_done = 1;
        offset += (size_t)length + 12;
        if (seen_iend) break;
    }
    if (!ihdr || !first_idat || !seen_iend) return IK_PNG_FAST_FALLBACK;

    uint32_t width = ik_be32(ihdr), height = ik_be32(ihdr + 4);
    int depth = ihdr[8], color_type = ihdr[9], interlace = ihdr[12];
    if (width == 0 || height == 0 || width > 0x7FFFFFFFu || height > 0x7FFFFFFFu || ihdr[10] != 0 || ihdr[11] != 0 ||
        interlace > 1 || !ik_valid_depth(color_type, depth)) {
        return IK_PNG_FAST_FALLBACK;
    }
    if (color_type == 3 && (!palette || palette_length / 3 > (1u << depth))) return IK_PNG_FAST_FALLBACK;
    if ((color_type == 0 || color_type == 4) && palette) return IK_PNG_FAST_FALLBACK;

    ik_png_expander expander;
    memset(&expander, 0, sizeof(expander));
    expander.color_type = color_type;
    expander.bit_depth = depth;
    if (trns) {
        // tRNS as libpng applies it; one libpng would ignore (with a warning) goes to libpng.
        if (color_type == 3) {
            if (trns_length == 0 || trns_length > palette_length / 3) return IK_PNG_FAST_FALLBACK;
        } else if (color_type == 0) {
            if (trns_length != 2) return IK_PNG_FAST_FALLBACK;
            expander.trns[0] = (uint16_t)(trns[0] << 8 | trns[1]);
            if (depth < 16 && expander.trns[0] > (1u << depth) - 1) return IK_PNG_FAST_FALLBACK;
        } else if (color_type == 2) {
            if (trns_length != 6) return IK_PNG_FAST_FALLBACK;
            for (int i = 0; i < 3; i++) {
                expander.trns[i] = (uint16_t)(trns[2 * i] << 8 | trns[2 * i + 1]);
                if (depth == 8 && expander.trns[i] > 255) return IK_PNG_FAST_FALLBACK;
            }
        } else {
            return IK_PNG_FAST_FALLBACK;
        }
        expander.has_trns = 1;
    }
    if (color_type == 3) {
        uint32_t entries = palette_length / 3;
        for (uint32_t i = 0; i < 256; i++) {
            // Indices past the palette are black, as libpng's zero-filled 256-entry palette.
            unsigned r = i < entries ? palette[3 * i] : 0, g = i < entries ? palette[3 * i + 1] : 0,
                     b = i < entries ? palette[3 * i + 2] : 0;
            unsigned a = trns && i < trns_length ? trns[i] : 255;
            expander.table[i] = ik_png_rgba(r, g, b, a);
        }
    } else if (color_type == 0 && depth <= 8) {
        unsigned scale = depth == 1 ? 255 : depth == 2 ? 85 : depth == 4 ? 17 : 1;
        for (uint32_t i = 0; i < (1u << depth); i++) {
            unsigned a = expander.has_trns && i == expander.trns[0] ? 0 : 255;
            expander.table[i] = ik_png_rgba(i * scale, i * scale, i * scale, a);
        }
    }

    int channels = ik_channels(color_type);
    size_t bpp = ((size_t)channels * (size_t)depth + 7) / 8;
    // The inflated stream: every pass's rows, each with its filter byte.
    size_t expected = 0, widest = 0;
    for (int pass = 0; pass < (interlace ? 7 : 1); pass++) {
        uint32_t x0 = interlace ? (uint32_t)ik_adam7[pass][0] : 0, y0 = interlace ? (uint32_t)ik_adam7[pass][1] : 0;
        uint32_t dx = interlace ? (uint32_t)ik_adam7[pass][2] : 1, dy = interlace ? (uint32_t)ik_adam7[pass][3] : 1;
        uint32_t pass_width = width > x0 ? (width - x0 + dx - 1) / dx : 0;
        uint32_t pass_height = height > y0 ? (height - y0 + dy - 1) / dy : 0;
        if (pass_width == 0 || pass_height == 0) continue;
        size_t row = ik_row_bytes(pass_width, channels, depth) + 1;
        if (row > widest) widest = row;
        if ((SIZE_MAX - expected) / pass_height < row) return IK_PNG_FAST_FALLBACK;
        expected += row * pass_height;
    }

    info->width = width;
    info->height = height;
    info->bit_depth = depth;
    info->color_type = color_type;
    info->interlaced = interlace != 0;
    info->has_alpha = (color_type & 4) != 0 || trns != NULL;
    info->working_bytes = expected + (idat_chunks > 1 ? idat_total : 0) + (interlace ? (size_t)width * 4 : 0);

    size_t stride = 0;
    unsigned char *out = (unsigned char *)alloc(context, info, &stride);
    if (!out) return IK_ERR_REFUSED;

    struct libdeflate_decompressor *decompressor = ik_decompressor();
    unsigned char *stream = (unsigned char *)malloc(expected);
    unsigned char *joined = NULL;
    unsigned char *scattered = NULL;
    const unsigned char *idat = first_idat;
    if (idat_chunks > 1) {
        joined = (unsigned char *)malloc(idat_total);
        if (joined) {
            size_t at = 0;
            for (size_t walk = 8; walk + 12 <= size;) {
                uint32_t length = ik_be32(bytes + walk);
                if (ik_be32(bytes + walk + 4) == IK_TAG('I', 'D', 'A', 'T')) {
                    memcpy(joined + at, bytes + walk + 8, length);
                    at += length;
                }
                walk += (size_t)length + 12;
                if (at == idat_total) break;
            }
        }
        idat = joined;
    }
    if (interlace) scattered = (unsigned char *)malloc((size_t)width * 4);
    if (!decompressor || !stream || !idat || (interlace && !scattered)) {
        free(stream);
        free(joined);
        free(scattered);
        snprintf(message, message_size, "out of memory for the PNG's inflated data");
        return IK_ERR_INTERNAL;
    }
    size_t produced = 0;
    enum libdeflate_result result = libdeflate_zlib_decompress(decompressor, idat, idat_total, stream, expected, &produced);
    free(joined);
    int status = IK_OK;
    if (result != LIBDEFLATE_SUCCESS || produced != expected) {
        status = IK_PNG_FAST_FALLBACK;  // damaged, short or long: libpng's rules decide
    } else {
        unsigned char *cursor = stream;
        for (int pass = 0; pass < (interlace ? 7 : 1) && status == IK_OK; pass++) {
            uint32_t x0 = interlace ? (uint32_t)ik_adam7[pass][0] : 0, y0 = interlace ? (uint32_t)ik_adam7[pass][1] : 0;
            uint32_t dx = interlace ? (uint32_t)ik_adam7[pass][2] : 1, dy = interlace ? (uint32_t)ik_adam7[pass][3] : 1;
            uint32_t pass_width = width > x0 ? (width - x0 + dx - 1) / dx : 0;
            uint32_t pass_height = height > y0 ? (height - y0 + dy - 1) / dy : 0;
            if (pass_width == 0 || pass_height == 0) continue;
            size_t row_bytes = ik_row_bytes(pass_width, channels, depth);
            const unsigned char *prior = NULL;
            for (uint32_t y = 0; y < pass_height; y++) {
                unsigned char *row = cursor + 1;
                int filter = cursor[0];
                // The first row's "prior" is zeros: Up adds nothing, Avg and Paeth see 0 above.
                if (!prior && (filter == 2 || filter == 3 || filter == 4)) {
                    if (filter == 2) filter = 0;
                    else if (filter == 4) filter = 1;  // Paeth with a = left, b = c = 0 is Sub
                    else {
                        for (size_t i = bpp; i < row_bytes; i++) row[i] = (unsigned char)(row[i] + (row[i - bpp] >> 1));
                        filter = 0;
                    }
                }
                if (filter == 4 && (bpp == 1 || bpp == 3 || bpp == 4) && prior && !interlace && y + 1 < pass_height &&
                    cursor[row_bytes + 1] == 4) {
                    unsigned char *next = row + row_bytes + 1;
                    ik_png_unfilter_paeth_pair(row, next, prior, row_bytes, bpp);
                    ik_png_expand_row(&expander, row, out + (size_t)y * stride, width);
                    ik_png_expand_row(&expander, next, out + (size_t)(y + 1) * stride, width);
                    prior = next;
                    cursor += 2 * (row_bytes + 1);
                    y++;
                    continue;
                }
                if (ik_png_unfilter(filter, row, prior, row_bytes, bpp) != 0) {
                    status = IK_PNG_FAST_FALLBACK;
                    break;
                }
                if (!interlace) {
                    ik_png_expand_row(&expander, row, out + (size_t)y * stride, width);
                } else {
                    ik_png_expand_row(&expander, row, scattered, pass_width);
                    unsigned char *line = out + (size_t)(y0 + y * dy) * stride;
                    for (uint32_t x = 0; x < pass_width; x++) memcpy(line + (size_t)(x0 + x * dx) * 4, scattered + (size_t)x * 4, 4);
                }
                prior = row;
                cursor += row_bytes + 1;
            }
        }
    }
    free(stream);
    free(scattered);
    return (ik_status)status;
}
