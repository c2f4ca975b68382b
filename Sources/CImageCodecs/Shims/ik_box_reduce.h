#ifndef IK_BOX_REDUCE_H
#define IK_BOX_REDUCE_H

// The integer box reduction in front of the fixed-point resampler (ik_resample.c): 16-bit column
// sums of box_y rows, then box_x pixels per reduced column. Not exported.

#include <stddef.h>
#include <stdint.h>

/// `value` clamped to a byte (the resampler's and the reduction's rounding).
static inline __attribute__((always_inline)) uint8_t clamp_byte(int32_t value) {
    return (uint8_t)(value < 0 ? 0 : value > 255 ? 255 : value);
}

/// A source read in boxes of box_x × box_y pixels (premultiplied on the way in when asked).
typedef struct {
    const uint8_t *source;
    size_t source_stride;
    int src_w, src_h, box_x, box_y, reduced_w, premultiply;
    uint8_t *premultiplied;
    uint16_t *sums;
} ik_box_reducer;

/// Produces reduced row `band` (box-averaged and premultiplied as needed) into `out`, or returns
/// the source row itself when there is nothing to do.
__attribute__((visibility("hidden"))) const uint8_t *ik_reduced_row(const ik_box_reducer *r, int band, uint8_t *out);

#endif
