#ifndef IK_JPEG_DC_INTERNAL_H
#define IK_JPEG_DC_INTERNAL_H

// The 1/8-scale JPEG decoder's shared parts (ik_jpeg_dc.c decodes, ik_jpeg_dc_syntax.c reads
// segments and markers): its types, its bit reader and the syntax functions. Not exported.

#include "ik_jpeg_dc.h"

#include <stddef.h>
#include <stdint.h>

#define IK_JPEG_DC_INTERNAL __attribute__((visibility("hidden")))

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

/// Consumes a restart marker between restart intervals (predictors are reset by the caller).
static inline int take_restart(dc_bits *bits, int *next_restart) {
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

/// A table or frame segment before or between scans: 0, or an IK_JPEG_DC_* code.
IK_JPEG_DC_INTERNAL int dc_parse_segment(dc_frame *f, int marker, const uint8_t *segment, size_t n);

/// Reads the marker at `*pos` (after any fill bytes): its code, with `*pos` just past it.
/// -1 when the data ends first; -2 when no marker is there.
IK_JPEG_DC_INTERNAL int dc_next_marker(const uint8_t *data, size_t size, size_t *pos);

/// Where the entropy-coded data from `p` ends: at the next marker other than a restart marker,
/// or `end` when the data stops first.
IK_JPEG_DC_INTERNAL const uint8_t *dc_skip_entropy_coded(const uint8_t *p, const uint8_t *end);

/// 0, or IK_JPEG_DC_ERROR for a segment no encoder writes.
IK_JPEG_DC_INTERNAL int dc_parse_scan_header(const dc_frame *f, const uint8_t *segment, size_t n, dc_scan_header *h);

#endif
