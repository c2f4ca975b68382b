#include "ik_jpeg_dc_internal.h"

#include <string.h>

// The JPEG syntax the 1/8-scale decoder reads: Huffman tables, frame and table segments, markers,
// scan headers, and where entropy-coded data ends.

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

/// A table or frame segment before or between scans: 0, or an IK_JPEG_DC_* code.
int dc_parse_segment(dc_frame *f, int marker, const uint8_t *segment, size_t n) {
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
int dc_next_marker(const uint8_t *data, size_t size, size_t *pos) {
    size_t at = *pos;
    if (at >= size) return -1;
    if (data[at] != 0xFF) return -2;
    while (at < size && data[at] == 0xFF) at++;
    if (at >= size) return -1;
    *pos = at + 1;
    return data[at];
}

/// Where the entropy-coded data from `p` ends: at the next marker other than a restart marker,
/// or `end` when the data stops first.
const uint8_t *dc_skip_entropy_coded(const uint8_t *p, const uint8_t *end) {
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

/// 0, or IK_JPEG_DC_ERROR for a segment no encoder writes.
int dc_parse_scan_header(const dc_frame *f, const uint8_t *segment, size_t n, dc_scan_header *h) {
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
