#include "ik_shims.h"

#include <stdlib.h>
#include <string.h>

// A 1/8-scale decoder for baseline JPEGs that reads only what that scale needs.
//
// At 1/8 scale every 8x8 block becomes one pixel: its DC coefficient. libjpeg-turbo still
// decodes every AC coefficient's Huffman code to find the next block; so does this, but with
// a table that skips a whole AC code and its extra bits in one lookup, and without the
// per-coefficient bookkeeping a full decoder needs. The luminance it produces is exactly
// libjpeg's 1x1 IDCT output; subsampled chroma is the block DC replicated where libjpeg uses a
// 2x2 IDCT, so the caller uses this only when it reduces the result at least 2x further (the
// chroma then still covers every output pixel; the 2x2 average of libjpeg's output is the DC). Anything unusual — progressive,
// arithmetic, 12-bit, CMYK/RGB, several scans, odd sampling — and any error or truncation
// returns a non-zero code so the caller decodes with TurboJPEG instead, which then reports
// the error (or the partial image) exactly as before.

enum { FAST_BITS = 10, AC_BITS = 11, MAX_COMPONENTS = 3 };

typedef struct {
    int defined;
    uint16_t fast[1 << FAST_BITS];  // (length << 8) | symbol; 0: code longer than FAST_BITS
    uint16_t ac_skip[1 << AC_BITS]; // (code + extra bits) << 8 | (run + 1); run + 1 == 0: end of block
    int32_t maxcode[18];
    int32_t valptr[17];
    int32_t mincode[17];
    uint8_t values[256];
} dc_huffman;

typedef struct {
    const uint8_t *p, *end;
    uint64_t bits;   // MSB-aligned
    int count;       // valid bits in `bits`, including padding
    int padding;     // zero bits fed past a marker or the end of the data
} dc_bits;

static int build_table(dc_huffman *table, const uint8_t counts[16], const uint8_t *values, int total) {
    memset(table, 0, sizeof(*table));
    memcpy(table->values, values, (size_t)total);
    int32_t code = 0;
    int k = 0;
    for (int length = 1; length <= 16; length++) {
        table->valptr[length] = k;
        table->mincode[length] = code;
        int n = counts[length - 1];
        if (code + n > (1 << length)) return -1; // more codes than this length can hold
        for (int i = 0; i < n; i++, k++, code++) {
            uint8_t symbol = values[k];
            if (length <= FAST_BITS) {
                int shift = FAST_BITS - length;
                for (int j = 0; j < (1 << shift); j++) table->fast[(code << shift) | j] = (uint16_t)(length << 8 | symbol);
            }
            if (length <= AC_BITS) {
                int run = symbol >> 4, size = symbol & 15;
                uint16_t entry = 0;
                if (size == 0 && run != 15) entry = (uint16_t)(length << 8);                      // end of block
                else if (size != 0 && length + size <= AC_BITS) entry = (uint16_t)((length + size) << 8 | (run + 1));
                if (entry) {
                    int shift = AC_BITS - length;
                    for (int j = 0; j < (1 << shift); j++) table->ac_skip[(code << shift) | j] = entry;
                }
            }
        }
        table->maxcode[length] = n ? code - 1 : -1;
        code <<= 1;
    }
    table->maxcode[17] = 0x7fffffff;
    table->defined = 1;
    return 0;
}

static inline void fill(dc_bits *b) {
    while (b->count <= 56) {
        uint8_t byte = 0;
        if (b->p < b->end && b->p[0] != 0xFF) {
            byte = *b->p++;
        } else if (b->p + 1 < b->end && b->p[0] == 0xFF && b->p[1] == 0x00) {
            byte = 0xFF;
            b->p += 2;
        } else {
            b->padding += 8; // a marker or the end: feed zeros, never consume it
        }
        b->bits |= (uint64_t)byte << (56 - b->count);
        b->count += 8;
    }
}

static inline int decode_symbol(dc_bits *b, const dc_huffman *table) {
    if (b->count < 16) fill(b);
    uint16_t fast = table->fast[b->bits >> (64 - FAST_BITS)];
    if (fast) {
        int length = fast >> 8;
        b->bits <<= length;
        b->count -= length;
        return fast & 0xFF;
    }
    for (int length = FAST_BITS + 1; length <= 16; length++) {
        int32_t code = (int32_t)(b->bits >> (64 - length));
        if (code <= table->maxcode[length]) {
            b->bits <<= length;
            b->count -= length;
            return table->values[table->valptr[length] + code - table->mincode[length]];
        }
    }
    return -1;
}

static inline int receive_extend(dc_bits *b, int size) {
    if (size == 0) return 0;
    if (b->count < size) fill(b);
    int value = (int)(b->bits >> (64 - size));
    b->bits <<= size;
    b->count -= size;
    return value < (1 << (size - 1)) ? value - (1 << size) + 1 : value;
}

static inline int clamp255(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }

int ik_jpeg_decode_dc(const uint8_t *data, size_t size, uint8_t *rgba, size_t stride, int out_width, int out_height) {
    if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return IK_JPEG_DC_UNSUPPORTED;
    dc_huffman *dc_tables = calloc(8, sizeof(dc_huffman)); // 4 DC, then 4 AC
    if (!dc_tables) return IK_JPEG_DC_UNSUPPORTED;
    dc_huffman *ac_tables = dc_tables + 4;
    int quant[4] = {0}, quant_defined[4] = {0};
    int width = 0, height = 0, components = 0, restart_interval = 0, adobe_transform = -1;
    int ids[MAX_COMPONENTS], hs[MAX_COMPONENTS], vs[MAX_COMPONENTS], tq[MAX_COMPONENTS];
    int scan_order[MAX_COMPONENTS], td[MAX_COMPONENTS], ta[MAX_COMPONENTS];
    const uint8_t *scan = NULL;
    int result = IK_JPEG_DC_UNSUPPORTED;
    int16_t *rows = NULL;

    size_t pos = 2;
    while (!scan) {
        if (pos >= size || data[pos] != 0xFF) { result = IK_JPEG_DC_ERROR; goto done; }
        while (pos < size && data[pos] == 0xFF) pos++; // fill bytes
        if (pos >= size) { result = IK_JPEG_DC_ERROR; goto done; }
        int marker = data[pos++];
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue; // no length
        if (marker == 0xD9 || pos + 2 > size) { result = IK_JPEG_DC_ERROR; goto done; }
        size_t length = (size_t)data[pos] << 8 | data[pos + 1];
        if (length < 2 || pos + length > size) { result = IK_JPEG_DC_ERROR; goto done; }
        const uint8_t *segment = data + pos + 2;
        size_t n = length - 2;
        switch (marker) {
        case 0xC0: case 0xC1: // baseline / extended sequential, Huffman
            if (components || n < 6 || segment[0] != 8) goto done;
            height = segment[1] << 8 | segment[2];
            width = segment[3] << 8 | segment[4];
            components = segment[5];
            if (width == 0 || height == 0 || (components != 1 && components != 3) || n < 6 + 3 * (size_t)components) goto done;
            for (int c = 0; c < components; c++) {
                ids[c] = segment[6 + 3 * c];
                hs[c] = segment[7 + 3 * c] >> 4;
                vs[c] = segment[7 + 3 * c] & 15;
                tq[c] = segment[8 + 3 * c];
                if (hs[c] < 1 || hs[c] > 4 || vs[c] < 1 || vs[c] > 4 || tq[c] > 3) goto done;
            }
            break;
        case 0xC2: case 0xC3: case 0xC5: case 0xC6: case 0xC7: case 0xC9: case 0xCA: case 0xCB: case 0xCD: case 0xCE: case 0xCF:
            goto done; // progressive, lossless, hierarchical, arithmetic
        case 0xC4: { // DHT
            size_t at = 0;
            while (at < n) {
                if (at + 17 > n) { result = IK_JPEG_DC_ERROR; goto done; }
                int table_class = segment[at] >> 4, index = segment[at] & 15;
                int total = 0;
                for (int i = 0; i < 16; i++) total += segment[at + 1 + i];
                if (table_class > 1 || index > 3 || total > 256 || at + 17 + (size_t)total > n) { result = IK_JPEG_DC_ERROR; goto done; }
                dc_huffman *table = table_class ? &ac_tables[index] : &dc_tables[index];
                if (build_table(table, segment + at + 1, segment + at + 17, total) != 0) { result = IK_JPEG_DC_ERROR; goto done; }
                at += 17 + (size_t)total;
            }
            break;
        }
        case 0xDB: { // DQT: only the DC step (the first entry) matters here
            size_t at = 0;
            while (at < n) {
                int precision = segment[at] >> 4, index = segment[at] & 15;
                size_t entries = precision ? 128 : 64;
                if (precision > 1 || index > 3 || at + 1 + entries > n) { result = IK_JPEG_DC_ERROR; goto done; }
                quant[index] = precision ? (segment[at + 1] << 8 | segment[at + 2]) : segment[at + 1];
                quant_defined[index] = 1;
                at += 1 + entries;
            }
            break;
        }
        case 0xDD: // DRI
            if (n < 2) { result = IK_JPEG_DC_ERROR; goto done; }
            restart_interval = segment[0] << 8 | segment[1];
            break;
        case 0xEE: // APP14 "Adobe": transform 0 means RGB, not YCbCr
            if (n >= 12 && memcmp(segment, "Adobe", 5) == 0) adobe_transform = segment[11];
            break;
        case 0xDA: { // SOS
            if (!components || n < 1) goto done;
            int count = segment[0];
            if (count != components || n < 1 + 2 * (size_t)count + 3) goto done; // one interleaved scan only
            for (int i = 0; i < count; i++) {
                int id = segment[1 + 2 * i], c = -1;
                for (int j = 0; j < components; j++) if (ids[j] == id) c = j;
                if (c < 0) { result = IK_JPEG_DC_ERROR; goto done; }
                scan_order[i] = c;
                td[c] = segment[2 + 2 * i] >> 4;
                ta[c] = segment[2 + 2 * i] & 15;
                if (td[c] > 3 || ta[c] > 3 || !dc_tables[td[c]].defined || !ac_tables[ta[c]].defined || !quant_defined[tq[c]]) goto done;
            }
            const uint8_t *spectral = segment + 1 + 2 * count;
            if (spectral[0] != 0 || spectral[1] != 63 || spectral[2] != 0) goto done;
            scan = data + pos + length;
            break;
        }
        default:
            break;
        }
        pos += length;
    }
    if (components == 3 && (adobe_transform == 0 || (ids[0] == 'R' && ids[1] == 'G' && ids[2] == 'B'))) goto done;
    // Below 16 pixels TurboJPEG picks a larger scale for the same output size; match it there.
    if (width < 16 || height < 16 || out_width != (width + 7) / 8 || out_height != (height + 7) / 8) goto done;

    int hmax = 1, vmax = 1;
    if (components == 1) {
        hs[0] = vs[0] = 1; // a single-component scan is not interleaved: one block per MCU
    } else {
        int blocks = 0;
        for (int c = 0; c < components; c++) {
            if (hs[c] > hmax) hmax = hs[c];
            if (vs[c] > vmax) vmax = vs[c];
            blocks += hs[c] * vs[c];
        }
        if (blocks > 10) { result = IK_JPEG_DC_ERROR; goto done; }
        for (int c = 0; c < components; c++) if (hmax % hs[c] || vmax % vs[c]) goto done;
    }
    int mcus_x = (width + 8 * hmax - 1) / (8 * hmax), mcus_y = (height + 8 * vmax - 1) / (8 * vmax);
    // One MCU row of DC values per component.
    size_t row_offset[MAX_COMPONENTS], row_width[MAX_COMPONENTS], total = 0;
    for (int c = 0; c < components; c++) {
        row_offset[c] = total;
        row_width[c] = (size_t)mcus_x * (size_t)hs[c];
        total += row_width[c] * (size_t)vs[c];
    }
    rows = malloc(total * sizeof(int16_t));
    if (!rows) goto done;

    dc_bits bits = {scan, data + size, 0, 0, 0};
    int predictor[MAX_COMPONENTS] = {0};
    int restarts_left = restart_interval, next_restart = 0;
    result = IK_JPEG_DC_ERROR;
    for (int my = 0; my < mcus_y; my++) {
        for (int mx = 0; mx < mcus_x; mx++) {
            if (restart_interval) {
                if (restarts_left == 0) {
                    // Only the last byte's padding may be left; the marker must come next.
                    if (bits.count - bits.padding >= 8) goto done;
                    bits.bits = 0;
                    bits.count = bits.padding = 0;
                    if (bits.p + 1 >= bits.end || bits.p[0] != 0xFF) goto done;
                    while (bits.p < bits.end && bits.p[0] == 0xFF) bits.p++;
                    if (bits.p >= bits.end || *bits.p != (0xD0 | next_restart)) goto done;
                    bits.p++;
                    next_restart = (next_restart + 1) & 7;
                    for (int c = 0; c < components; c++) predictor[c] = 0;
                    restarts_left = restart_interval;
                }
                restarts_left--;
            }
            for (int i = 0; i < components; i++) {
                int c = scan_order[i];
                const dc_huffman *dc = &dc_tables[td[c]], *ac = &ac_tables[ta[c]];
                for (int by = 0; by < vs[c]; by++) {
                    for (int bx = 0; bx < hs[c]; bx++) {
                        int s = decode_symbol(&bits, dc);
                        if (s < 0 || s > 11) goto done;
                        predictor[c] += receive_extend(&bits, s);
                        if (predictor[c] < -32768 || predictor[c] > 32767) goto done; // not from a real encoder
                        rows[row_offset[c] + (size_t)by * row_width[c] + (size_t)mx * (size_t)hs[c] + (size_t)bx] = (int16_t)predictor[c];
                        int k = 1;
                        while (k < 64) {
                            if (bits.count < 32) fill(&bits);
                            uint16_t skip = ac->ac_skip[bits.bits >> (64 - AC_BITS)];
                            if (skip) {
                                int consumed = skip >> 8, run = skip & 0xFF;
                                bits.bits <<= consumed;
                                bits.count -= consumed;
                                if (run == 0) break;
                                k += run;
                                continue;
                            }
                            int rs = decode_symbol(&bits, ac);
                            if (rs < 0) goto done;
                            int run = rs >> 4, extra = rs & 15;
                            if (extra == 0) {
                                if (run != 15) break;
                                k += 16;
                                continue;
                            }
                            if (extra > 10) goto done;
                            if (bits.count < extra) fill(&bits);
                            bits.bits <<= extra;
                            bits.count -= extra;
                            k += run + 1;
                        }
                        if (k > 64) goto done; // a run past the block's end
                    }
                }
            }
            if (bits.count < bits.padding) goto done; // used bits that are not in the data
        }
        // This MCU row's blocks become vmax output rows.
        for (int ly = 0; ly < vmax; ly++) {
            int y = my * vmax + ly;
            if (y >= out_height) break;
            uint8_t *out = rgba + (size_t)y * stride;
            const int16_t *row[MAX_COMPONENTS];
            for (int c = 0; c < components; c++) row[c] = rows + row_offset[c] + (size_t)(ly * vs[c] / vmax) * row_width[c];
            for (int x = 0; x < out_width; x++, out += 4) {
                int luma = clamp255(((row[0][x * hs[0] / hmax] * quant[tq[0]] + 4) >> 3) + 128);
                if (components == 1) {
                    out[0] = out[1] = out[2] = (uint8_t)luma;
                } else {
                    int cb = clamp255(((row[1][x * hs[1] / hmax] * quant[tq[1]] + 4) >> 3) + 128) - 128;
                    int cr = clamp255(((row[2][x * hs[2] / hmax] * quant[tq[2]] + 4) >> 3) + 128) - 128;
                    // libjpeg's fixed-point YCbCr -> RGB (16 fraction bits, rounded).
                    out[0] = (uint8_t)clamp255(luma + ((91881 * cr + 32768) >> 16));
                    out[1] = (uint8_t)clamp255(luma + ((-22554 * cb - 46802 * cr + 32768) >> 16));
                    out[2] = (uint8_t)clamp255(luma + ((116130 * cb + 32768) >> 16));
                }
                out[3] = 255;
            }
        }
    }
    // Clean only if EOI follows the scan, as TurboJPEG requires (it reports a missing end as
    // premature): anything else — more scans, DNL, trailing bytes — goes to TurboJPEG.
    if (bits.count - bits.padding >= 8) goto done;
    while (bits.p < bits.end && bits.p[0] == 0xFF && bits.p + 1 < bits.end && bits.p[1] == 0xFF) bits.p++;
    if (bits.p + 1 >= bits.end || bits.p[0] != 0xFF || bits.p[1] != 0xD9) goto done;
    result = IK_JPEG_DC_OK;

done:
    free(rows);
    free(dc_tables);
    return result;
}
