#include "ik_jpeg_dc_internal.h"

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
        if (dc_parse_scan_header(f, data + pos + 2, length - 2, &h) != 0) goto done;
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
                scan_end = dc_skip_entropy_coded(scan, data + size);
            }
            for (int i = 0; i < count; i++) dc_low_bit[order[i]] = al;
        } else {
            // An AC scan: one component whose DC has begun (libjpeg only warns otherwise).
            if (count != 1 || se < ss || se > 63 || dc_low_bit[order[0]] < 0) { result = IK_JPEG_DC_UNSUPPORTED; goto done; }
            if (quant[order[0]] < 0) {
                if (!f->quant_defined[f->tq[order[0]]]) goto done;
                quant[order[0]] = f->quant[f->tq[order[0]]];
            }
            scan_end = dc_skip_entropy_coded(scan, data + size);
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
            marker = dc_next_marker(data, size, &pos);
            if (marker < 0) goto done;
            if (marker == 0xD9 || marker == 0xDA) break;
            if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) goto done; // stray
            if (pos + 2 > size) goto done;
            size_t segment_length = (size_t)data[pos] << 8 | data[pos + 1];
            if (segment_length < 2 || pos + segment_length > size) goto done;
            if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) goto done; // a second frame
            int status = dc_parse_segment(f, marker, data + pos + 2, segment_length - 2);
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
        int marker = dc_next_marker(data, size, &pos);
        if (marker < 0) { result = IK_JPEG_DC_ERROR; goto done; }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue; // no length
        if (marker == 0xD9 || pos + 2 > size) { result = IK_JPEG_DC_ERROR; goto done; }
        size_t length = (size_t)data[pos] << 8 | data[pos + 1];
        if (length < 2 || pos + length > size) { result = IK_JPEG_DC_ERROR; goto done; }
        if (marker == 0xDA) break;
        result = dc_parse_segment(f, marker, data + pos + 2, length - 2);
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
    if (dc_parse_scan_header(f, data + pos + 2, length - 2, &h) != 0) { result = IK_JPEG_DC_ERROR; goto done; }
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
