#include "ik_jpeg_dc.h"

#include <stdlib.h>
#include <string.h>

// A 1/8-scale decoder for baseline and progressive JPEGs that reads only what that scale needs.
//
// At 1/8 scale every 8x8 block becomes one pixel: its DC coefficient. libjpeg-turbo still
// decodes every AC coefficient's Huffman code to find the next block; in a baseline file so
// does this, but with a table that skips a whole AC code and its extra bits in one lookup, and
// without the per-coefficient bookkeeping a full decoder needs. In a progressive file the DC
// coefficients come in scans of their own, and the AC scans are passed over by a byte search.
// The luminance it produces is exactly libjpeg's 1x1 IDCT output; subsampled chroma is the
// block DC replicated where libjpeg uses a 2x2 IDCT, so the caller uses this only when it
// reduces the result at least 2x further (the chroma then still covers every output pixel; the
// 2x2 average of libjpeg's output is the DC). Anything unusual — arithmetic, 12-bit, CMYK/RGB,
// a multi-scan sequential file, odd sampling, a progression libjpeg would only warn about —
// and any error or truncation returns a non-zero code so the caller decodes with TurboJPEG
// instead, which then reports the error (or the partial image) exactly as before.

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

// Progressive files. The first DC scan of a component, and any DC refinement scans after it,
// carry every block's DC coefficient; the AC scans that make up most of the file can be passed
// over without Huffman decoding, since entropy-coded data ends at the next marker (a 0xFF byte
// there is stuffed as FF 00, or is a restart marker).

typedef struct {
    dc_huffman *dc_tables, *ac_tables; // 4 each
    int quant[4], quant_defined[4];
    int width, height, components, restart_interval, adobe_transform, progressive;
    int ids[MAX_COMPONENTS], hs[MAX_COMPONENTS], vs[MAX_COMPONENTS], tq[MAX_COMPONENTS];
    int hmax, vmax, mcus_x, mcus_y;
} dc_frame;

/// A table or frame segment before or between scans: 0, or an IK_JPEG_DC_* code.
static int parse_segment(dc_frame *f, int marker, const uint8_t *segment, size_t n) {
    switch (marker) {
    case 0xC0: case 0xC1: case 0xC2: // baseline / extended sequential / progressive, Huffman
        if (f->components || n < 6 || segment[0] != 8) return IK_JPEG_DC_UNSUPPORTED;
        f->progressive = marker == 0xC2;
        f->height = segment[1] << 8 | segment[2];
        f->width = segment[3] << 8 | segment[4];
        f->components = segment[5];
        if (f->width == 0 || f->height == 0 || (f->components != 1 && f->components != 3) || n < 6 + 3 * (size_t)f->components)
            return IK_JPEG_DC_UNSUPPORTED;
        for (int c = 0; c < f->components; c++) {
            f->ids[c] = segment[6 + 3 * c];
            f->hs[c] = segment[7 + 3 * c] >> 4;
            f->vs[c] = segment[7 + 3 * c] & 15;
            f->tq[c] = segment[8 + 3 * c];
            if (f->hs[c] < 1 || f->hs[c] > 4 || f->vs[c] < 1 || f->vs[c] > 4 || f->tq[c] > 3) return IK_JPEG_DC_UNSUPPORTED;
        }
        return 0;
    case 0xC3: case 0xC5: case 0xC6: case 0xC7: case 0xC9: case 0xCA: case 0xCB: case 0xCD: case 0xCE: case 0xCF:
        return IK_JPEG_DC_UNSUPPORTED; // lossless, hierarchical, arithmetic
    case 0xC4: { // DHT
        size_t at = 0;
        while (at < n) {
            if (at + 17 > n) return IK_JPEG_DC_ERROR;
            int table_class = segment[at] >> 4, index = segment[at] & 15;
            int total = 0;
            for (int i = 0; i < 16; i++) total += segment[at + 1 + i];
            if (table_class > 1 || index > 3 || total > 256 || at + 17 + (size_t)total > n) return IK_JPEG_DC_ERROR;
            dc_huffman *table = table_class ? &f->ac_tables[index] : &f->dc_tables[index];
            if (build_table(table, segment + at + 1, segment + at + 17, total) != 0) return IK_JPEG_DC_ERROR;
            at += 17 + (size_t)total;
        }
        return 0;
    }
    case 0xDB: { // DQT: only the DC step (the first entry) matters here
        size_t at = 0;
        while (at < n) {
            int precision = segment[at] >> 4, index = segment[at] & 15;
            size_t entries = precision ? 128 : 64;
            if (precision > 1 || index > 3 || at + 1 + entries > n) return IK_JPEG_DC_ERROR;
            f->quant[index] = precision ? (segment[at + 1] << 8 | segment[at + 2]) : segment[at + 1];
            f->quant_defined[index] = 1;
            at += 1 + entries;
        }
        return 0;
    }
    case 0xDD: // DRI
        if (n < 2) return IK_JPEG_DC_ERROR;
        f->restart_interval = segment[0] << 8 | segment[1];
        return 0;
    case 0xEE: // APP14 "Adobe": transform 0 means RGB, not YCbCr
        if (n >= 12 && memcmp(segment, "Adobe", 5) == 0) f->adobe_transform = segment[11];
        return 0;
    default:
        return 0;
    }
}

/// Reads the marker at `*pos` (after any fill bytes): its code, with `*pos` just past it.
/// -1 when the data ends first; -2 when no marker is there.
static int next_marker(const uint8_t *data, size_t size, size_t *pos) {
    size_t at = *pos;
    if (at >= size) return -1;
    if (data[at] != 0xFF) return -2;
    while (at < size && data[at] == 0xFF) at++;
    if (at >= size) return -1;
    *pos = at + 1;
    return data[at];
}

/// Consumes a restart marker between restart intervals (predictors are reset by the caller).
static int take_restart(dc_bits *bits, int *next_restart) {
    // Only the last byte's padding may be left; the marker must come next.
    if (bits->count - bits->padding >= 8) return -1;
    bits->bits = 0;
    bits->count = bits->padding = 0;
    if (bits->p + 1 >= bits->end || bits->p[0] != 0xFF) return -1;
    while (bits->p < bits->end && bits->p[0] == 0xFF) bits->p++;
    if (bits->p >= bits->end || *bits->p != (0xD0 | *next_restart)) return -1;
    bits->p++;
    *next_restart = (*next_restart + 1) & 7;
    return 0;
}

/// Where the entropy-coded data from `p` ends: at the next marker other than a restart marker,
/// or `end` when the data stops first.
static const uint8_t *skip_entropy_coded(const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        p = memchr(p, 0xFF, (size_t)(end - p));
        if (!p || p + 1 >= end) return end;
        uint8_t next = p[1];
        if (next == 0x00 || (next >= 0xD0 && next <= 0xD7)) p += 2;
        else if (next == 0xFF) p += 1; // fill byte before a marker
        else return p;
    }
    return end;
}

static inline int get_bit(dc_bits *b) {
    if (b->count < 1) fill(b);
    int bit = (int)(b->bits >> 63);
    b->bits <<= 1;
    b->count -= 1;
    return bit;
}

/// An SOS segment's fields: the components in scan order (each at most once) with their DC and
/// AC table numbers, spectral selection and successive approximation.
typedef struct {
    int count, order[MAX_COMPONENTS], td[MAX_COMPONENTS], ta[MAX_COMPONENTS];
    int ss, se, ah, al;
} dc_scan_header;

/// 0, or IK_JPEG_DC_ERROR for a segment no encoder writes.
static int parse_scan_header(const dc_frame *f, const uint8_t *segment, size_t n, dc_scan_header *h) {
    if (n < 1) return IK_JPEG_DC_ERROR;
    h->count = segment[0];
    if (h->count < 1 || h->count > f->components || n < 1 + 2 * (size_t)h->count + 3) return IK_JPEG_DC_ERROR;
    for (int i = 0; i < h->count; i++) {
        int id = segment[1 + 2 * i], c = -1;
        for (int j = 0; j < f->components; j++) if (f->ids[j] == id) c = j;
        if (c < 0) return IK_JPEG_DC_ERROR;
        for (int k = 0; k < i; k++) if (h->order[k] == c) return IK_JPEG_DC_ERROR;
        h->order[i] = c;
        h->td[c] = segment[2 + 2 * i] >> 4;
        h->ta[c] = segment[2 + 2 * i] & 15;
        if (h->td[c] > 3 || h->ta[c] > 3) return IK_JPEG_DC_ERROR;
    }
    const uint8_t *spectral = segment + 1 + 2 * h->count;
    h->ss = spectral[0];
    h->se = spectral[1];
    h->ah = spectral[2] >> 4;
    h->al = spectral[2] & 15;
    return 0;
}

/// One output row from per-component rows of DC values (dequantised here).
/// `bias` is added to each dequantised value: half the range of DC bits that have not arrived.
static void emit_row(const dc_frame *f, const int16_t *const row[MAX_COMPONENTS], const int quant[MAX_COMPONENTS],
                     const int bias[MAX_COMPONENTS], uint8_t *out, int out_width) {
    for (int x = 0; x < out_width; x++, out += 4) {
        int luma = clamp255(((row[0][x * f->hs[0] / f->hmax] * quant[0] + bias[0] + 4) >> 3) + 128);
        if (f->components == 1) {
            out[0] = out[1] = out[2] = (uint8_t)luma;
        } else {
            int cb = clamp255(((row[1][x * f->hs[1] / f->hmax] * quant[1] + bias[1] + 4) >> 3) + 128) - 128;
            int cr = clamp255(((row[2][x * f->hs[2] / f->hmax] * quant[2] + bias[2] + 4) >> 3) + 128) - 128;
            // libjpeg's fixed-point YCbCr -> RGB (16 fraction bits, rounded).
            out[0] = (uint8_t)clamp255(luma + ((91881 * cr + 32768) >> 16));
            out[1] = (uint8_t)clamp255(luma + ((-22554 * cb - 46802 * cr + 32768) >> 16));
            out[2] = (uint8_t)clamp255(luma + ((116130 * cb + 32768) >> 16));
        }
        out[3] = 255;
    }
}

/// The one interleaved scan of a baseline file, AC codes skipped by table, a row of MCUs at a time.
static int decode_baseline(const dc_frame *f, const uint8_t *scan, const uint8_t *end, const int scan_order[],
                           const int td[], const int ta[], uint8_t *rgba, size_t stride, int out_width, int out_height) {
    int components = f->components;
    // One MCU row of DC values per component.
    size_t row_offset[MAX_COMPONENTS], row_width[MAX_COMPONENTS], total = 0;
    for (int c = 0; c < components; c++) {
        row_offset[c] = total;
        row_width[c] = (size_t)f->mcus_x * (size_t)f->hs[c];
        total += row_width[c] * (size_t)f->vs[c];
    }
    int16_t *rows = malloc(total * sizeof(int16_t));
    if (!rows) return IK_JPEG_DC_UNSUPPORTED;
    int quant[MAX_COMPONENTS], bias[MAX_COMPONENTS] = {0};
    for (int c = 0; c < components; c++) quant[c] = f->quant[f->tq[c]];

    int result = IK_JPEG_DC_ERROR;
    dc_bits bits = {scan, end, 0, 0, 0};
    int predictor[MAX_COMPONENTS] = {0};
    int restarts_left = f->restart_interval, next_restart = 0;
    for (int my = 0; my < f->mcus_y; my++) {
        for (int mx = 0; mx < f->mcus_x; mx++) {
            if (f->restart_interval) {
                if (restarts_left == 0) {
                    if (take_restart(&bits, &next_restart) != 0) goto done;
                    for (int c = 0; c < components; c++) predictor[c] = 0;
                    restarts_left = f->restart_interval;
                }
                restarts_left--;
            }
            for (int i = 0; i < components; i++) {
                int c = scan_order[i];
                const dc_huffman *dc = &f->dc_tables[td[c]], *ac = &f->ac_tables[ta[c]];
                for (int by = 0; by < f->vs[c]; by++) {
                    for (int bx = 0; bx < f->hs[c]; bx++) {
                        int s = decode_symbol(&bits, dc);
                        if (s < 0 || s > 11) goto done;
                        predictor[c] += receive_extend(&bits, s);
                        if (predictor[c] < -32768 || predictor[c] > 32767) goto done; // not from a real encoder
                        rows[row_offset[c] + (size_t)by * row_width[c] + (size_t)mx * (size_t)f->hs[c] + (size_t)bx] = (int16_t)predictor[c];
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
        for (int ly = 0; ly < f->vmax; ly++) {
            int y = my * f->vmax + ly;
            if (y >= out_height) break;
            const int16_t *row[MAX_COMPONENTS];
            for (int c = 0; c < components; c++) row[c] = rows + row_offset[c] + (size_t)(ly * f->vs[c] / f->vmax) * row_width[c];
            emit_row(f, row, quant, bias, rgba + (size_t)y * stride, out_width);
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
    return result;
}

/// One DC scan of a progressive file (first scan: Ah == 0; refinement: one bit per block) into
/// whole-image planes of DC coefficients. Interleaved scans go in MCU order; a scan of one
/// component covers that component's own blocks only, in raster order.
static int decode_dc_scan(const dc_frame *f, dc_bits *bits, int count, const int order[], const int td[], int ah, int al,
                          int16_t *const planes[], const size_t plane_width[]) {
    int predictor[MAX_COMPONENTS] = {0};
    int restarts_left = f->restart_interval, next_restart = 0;
    int units_x, units_y;
    int single = count == 1;
    int c0 = order[0];
    if (single) {
        int component_width = (f->width * f->hs[c0] + f->hmax - 1) / f->hmax;
        int component_height = (f->height * f->vs[c0] + f->vmax - 1) / f->vmax;
        units_x = (component_width + 7) / 8;
        units_y = (component_height + 7) / 8;
    } else {
        units_x = f->mcus_x;
        units_y = f->mcus_y;
    }
    for (int uy = 0; uy < units_y; uy++) {
        for (int ux = 0; ux < units_x; ux++) {
            if (f->restart_interval) {
                if (restarts_left == 0) {
                    if (take_restart(bits, &next_restart) != 0) return -1;
                    for (int c = 0; c < f->components; c++) predictor[c] = 0;
                    restarts_left = f->restart_interval;
                }
                restarts_left--;
            }
            for (int i = 0; i < count; i++) {
                int c = order[i];
                int blocks_x = single ? 1 : f->hs[c], blocks_y = single ? 1 : f->vs[c];
                for (int by = 0; by < blocks_y; by++) {
                    for (int bx = 0; bx < blocks_x; bx++) {
                        int16_t *coefficient = planes[c] + (size_t)(uy * blocks_y + by) * plane_width[c] + (size_t)(ux * blocks_x + bx);
                        if (ah == 0) {
                            int s = decode_symbol(bits, &f->dc_tables[td[c]]);
                            if (s < 0 || s > 11) return -1;
                            predictor[c] += receive_extend(bits, s);
                            int value = predictor[c] * (1 << al);
                            if (predictor[c] < -32768 || predictor[c] > 32767 || value < -32768 || value > 32767) return -1;
                            *coefficient = (int16_t)value;
                        } else if (get_bit(bits)) {
                            *coefficient = (int16_t)(*coefficient | (1 << al));
                        }
                    }
                }
            }
            if (bits->count < bits->padding) return -1; // used bits that are not in the data
        }
    }
    if (bits->count - bits->padding >= 8) return -1; // more data than blocks
    return 0;
}

/// Whether the DC coefficients read so far make the result `flags` asks for: every bit (no
/// flags); bits enough that the missing ones move no pixel more than 2 levels, reconstructed
/// at the middle of their range (IK_JPEG_DC_PARTIAL); any first scan (IK_JPEG_DC_FIRST_SCANS).
static int dc_ready(const dc_frame *f, const int low_bit[], const int quant[], int flags) {
    for (int c = 0; c < f->components; c++) {
        if (low_bit[c] < 0) return 0;
        if (flags & IK_JPEG_DC_FIRST_SCANS) continue;
        if (flags & IK_JPEG_DC_PARTIAL) {
            if (((1 << low_bit[c]) - 1) * quant[c] > 32) return 0;
        } else if (low_bit[c] != 0) {
            return 0;
        }
    }
    return 1;
}

/// The scans of a progressive file from its first SOS (`pos` just past the marker). With
/// `rgba`, decodes the DC scans into it; without, only finds where they end. `*dc_end` is the
/// offset just past the marker after the scan that made the DC coefficients ready (`dc_ready`); with
/// IK_JPEG_DC_PARTIAL or IK_JPEG_DC_FIRST_SCANS the rest of the data is not read.
static int decode_progressive(dc_frame *f, const uint8_t *data, size_t size, size_t pos, uint8_t *rgba, size_t stride,
                              int out_width, int out_height, int flags, size_t *dc_end) {
    int components = f->components;
    int dc_low_bit[MAX_COMPONENTS], quant[MAX_COMPONENTS];
    int16_t *planes[MAX_COMPONENTS] = {NULL};
    size_t plane_width[MAX_COMPONENTS];
    for (int c = 0; c < components; c++) {
        dc_low_bit[c] = -1; // no DC scan yet
        quant[c] = -1;      // latched at the component's first scan, as libjpeg does
        plane_width[c] = (size_t)f->mcus_x * (size_t)f->hs[c];
        if (rgba) {
            planes[c] = calloc(plane_width[c] * (size_t)f->mcus_y * (size_t)f->vs[c], sizeof(int16_t));
            if (!planes[c]) { for (int k = 0; k < c; k++) free(planes[k]); return IK_JPEG_DC_UNSUPPORTED; }
        }
    }
    int result = IK_JPEG_DC_ERROR;
    int complete = 0;
    *dc_end = 0;
    for (;;) {
        // pos: at the SOS segment's length.
        if (pos + 2 > size) goto done;
        size_t length = (size_t)data[pos] << 8 | data[pos + 1];
        if (length < 2 || pos + length > size) goto done;
        dc_scan_header h;
        if (parse_scan_header(f, data + pos + 2, length - 2, &h) != 0) goto done;
        int count = h.count;
        const int *order = h.order, *td = h.td;
        int ss = h.ss, se = h.se, ah = h.ah, al = h.al;
        const uint8_t *scan = data + pos + length;
        const uint8_t *scan_end;
        if (ss == 0) {
            if (se != 0 || al > 13) { result = IK_JPEG_DC_UNSUPPORTED; goto done; }
            if (count > 1) {
                int blocks = 0;
                for (int i = 0; i < count; i++) blocks += f->hs[order[i]] * f->vs[order[i]];
                if (blocks > 10) goto done;
            }
            for (int i = 0; i < count; i++) {
                int c = order[i];
                if (ah == 0 ? dc_low_bit[c] != -1 : (dc_low_bit[c] != ah || al != ah - 1)) { result = IK_JPEG_DC_UNSUPPORTED; goto done; }
                if (ah == 0 && !f->dc_tables[td[c]].defined) goto done;
                if (quant[c] < 0) {
                    if (!f->quant_defined[f->tq[c]]) goto done;
                    quant[c] = f->quant[f->tq[c]];
                }
            }
            if (rgba) {
                dc_bits bits = {scan, data + size, 0, 0, 0};
                if (decode_dc_scan(f, &bits, count, order, td, ah, al, planes, plane_width) != 0) goto done;
                scan_end = bits.p;
            } else {
                scan_end = skip_entropy_coded(scan, data + size);
            }
            for (int i = 0; i < count; i++) dc_low_bit[order[i]] = al;
        } else {
            // An AC scan: one component whose DC has begun (libjpeg only warns otherwise).
            if (count != 1 || se < ss || se > 63 || dc_low_bit[order[0]] < 0) { result = IK_JPEG_DC_UNSUPPORTED; goto done; }
            if (quant[order[0]] < 0) {
                if (!f->quant_defined[f->tq[order[0]]]) goto done;
                quant[order[0]] = f->quant[f->tq[order[0]]];
            }
            scan_end = skip_entropy_coded(scan, data + size);
        }
        pos = (size_t)(scan_end - data);
        // The scan is known to be whole once a marker follows it.
        if (pos + 1 >= size) goto done;
        if (flags & (IK_JPEG_DC_PARTIAL | IK_JPEG_DC_FIRST_SCANS)) {
            if (dc_ready(f, dc_low_bit, quant, flags)) {
                complete = 1;
                *dc_end = pos + 2;
                break;
            }
        } else if (!complete && dc_ready(f, dc_low_bit, quant, 0)) {
            complete = 1;
            *dc_end = pos + 2;
        }
        // Tables and other segments up to the next scan or the end of the image.
        int marker;
        for (;;) {
            marker = next_marker(data, size, &pos);
            if (marker < 0) goto done;
            if (marker == 0xD9 || marker == 0xDA) break;
            if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) goto done; // stray
            if (pos + 2 > size) goto done;
            size_t segment_length = (size_t)data[pos] << 8 | data[pos + 1];
            if (segment_length < 2 || pos + segment_length > size) goto done;
            if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) goto done; // a second frame
            int status = parse_segment(f, marker, data + pos + 2, segment_length - 2);
            if (status) { result = status; goto done; }
            pos += segment_length;
        }
        if (marker == 0xD9) break;
    }
    if (!complete) { result = IK_JPEG_DC_UNSUPPORTED; goto done; } // a component without all its DC bits
    if (rgba) {
        int bias[MAX_COMPONENTS];
        for (int c = 0; c < components; c++) bias[c] = ((1 << dc_low_bit[c]) - 1) * quant[c] / 2;
        for (int y = 0; y < out_height; y++) {
            const int16_t *row[MAX_COMPONENTS];
            for (int c = 0; c < components; c++) row[c] = planes[c] + (size_t)(y * f->vs[c] / f->vmax) * plane_width[c];
            emit_row(f, row, quant, bias, rgba + (size_t)y * stride, out_width);
        }
    }
    result = IK_JPEG_DC_OK;
done:
    for (int c = 0; c < components; c++) free(planes[c]);
    return result;
}

/// Headers up to the first scan, then the baseline or progressive path.
static int decode_dc(const uint8_t *data, size_t size, uint8_t *rgba, size_t stride, int out_width, int out_height,
                     int flags, size_t *dc_end) {
    *dc_end = 0;
    if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return IK_JPEG_DC_UNSUPPORTED;
    dc_huffman *tables = calloc(8, sizeof(dc_huffman)); // 4 DC, then 4 AC
    if (!tables) return IK_JPEG_DC_UNSUPPORTED;
    dc_frame frame = {.dc_tables = tables, .ac_tables = tables + 4, .adobe_transform = -1};
    dc_frame *f = &frame;
    int result = IK_JPEG_DC_ERROR;
    size_t pos = 2;
    for (;;) {
        int marker = next_marker(data, size, &pos);
        if (marker < 0) { result = IK_JPEG_DC_ERROR; goto done; }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue; // no length
        if (marker == 0xD9 || pos + 2 > size) { result = IK_JPEG_DC_ERROR; goto done; }
        size_t length = (size_t)data[pos] << 8 | data[pos + 1];
        if (length < 2 || pos + length > size) { result = IK_JPEG_DC_ERROR; goto done; }
        if (marker == 0xDA) break;
        result = parse_segment(f, marker, data + pos + 2, length - 2);
        if (result) goto done;
        result = IK_JPEG_DC_ERROR;
        pos += length;
    }
    result = IK_JPEG_DC_UNSUPPORTED;
    int components = f->components;
    if (!components) goto done;
    if (components == 3 && (f->adobe_transform == 0 || (f->ids[0] == 'R' && f->ids[1] == 'G' && f->ids[2] == 'B'))) goto done;
    // Below 16 pixels TurboJPEG picks a larger scale for the same output size; match it there.
    if (f->width < 16 || f->height < 16) goto done;
    if (rgba && (out_width != (f->width + 7) / 8 || out_height != (f->height + 7) / 8)) goto done;

    f->hmax = f->vmax = 1;
    if (components == 1) {
        f->hs[0] = f->vs[0] = 1; // a single-component scan is not interleaved: one block per MCU
    } else {
        int blocks = 0;
        for (int c = 0; c < components; c++) {
            if (f->hs[c] > f->hmax) f->hmax = f->hs[c];
            if (f->vs[c] > f->vmax) f->vmax = f->vs[c];
            blocks += f->hs[c] * f->vs[c];
        }
        if (!f->progressive && blocks > 10) { result = IK_JPEG_DC_ERROR; goto done; }
        for (int c = 0; c < components; c++) if (f->hmax % f->hs[c] || f->vmax % f->vs[c]) goto done;
    }
    f->mcus_x = (f->width + 8 * f->hmax - 1) / (8 * f->hmax);
    f->mcus_y = (f->height + 8 * f->vmax - 1) / (8 * f->vmax);

    if (f->progressive) {
        result = decode_progressive(f, data, size, pos, rgba, stride, out_width, out_height, flags, dc_end);
        goto done;
    }
    if (!rgba) goto done;
    // Baseline: one interleaved scan of every component.
    size_t length = (size_t)data[pos] << 8 | data[pos + 1];
    dc_scan_header h;
    if (parse_scan_header(f, data + pos + 2, length - 2, &h) != 0) { result = IK_JPEG_DC_ERROR; goto done; }
    if (h.count != components || h.ss != 0 || h.se != 63 || h.ah != 0 || h.al != 0) goto done;
    for (int c = 0; c < components; c++) {
        if (!f->dc_tables[h.td[c]].defined || !f->ac_tables[h.ta[c]].defined || !f->quant_defined[f->tq[c]]) goto done;
    }
    result = decode_baseline(f, data + pos + length, data + size, h.order, h.td, h.ta, rgba, stride, out_width, out_height);
done:
    free(tables);
    return result;
}

int ik_jpeg_decode_dc(const uint8_t *data, size_t size, uint8_t *rgba, size_t stride, int out_width, int out_height) {
    size_t dc_end;
    return decode_dc(data, size, rgba, stride, out_width, out_height, 0, &dc_end);
}

int ik_jpeg_decode_dc_scans(const uint8_t *data, size_t size, uint8_t *rgba, size_t stride, int out_width, int out_height,
                            int flags, size_t *dc_end) {
    return decode_dc(data, size, rgba, stride, out_width, out_height, flags, dc_end);
}

size_t ik_jpeg_dc_scans_end(const uint8_t *data, size_t size) {
    size_t dc_end = 0;
    return decode_dc(data, size, NULL, 0, 0, 0, IK_JPEG_DC_PARTIAL, &dc_end) == IK_JPEG_DC_OK ? dc_end : 0;
}
