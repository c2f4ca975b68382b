// GIF image data: LZW decoding straight from the sub-blocks, and drawing palette indices onto an
// RGBA canvas.
//
// giflib decodes a line at a time through a prefix/suffix table, pushing each string on a stack
// and popping it in reverse. Here every table entry instead remembers where its string was last
// written in the frame's output (GIF's LZW is LZ77 in disguise: the string of a new code is the
// previous code's string plus the next byte, and both were just written side by side), so a code
// becomes one forward copy of earlier output, 8 bytes at a time. Literals copy from a table of
// the byte values past the frame, so the loop does not branch on the kind of code (a branch the
// CPU could not predict on photographic GIFs), and the sub-blocks are joined first, so a code is
// read with one load and no block boundary to test. The semantics are giflib's
// (`strict` 0): a non-literal code right after a clear, an end code or a block terminator before
// the frame is full are defects; a code past the next free one is giflib's tolerated defect (the
// previous string and the byte 2, giflib's NO_SUCH_CODE cut to a byte); a full table keeps being
// used (deferred clear); data after the last pixel is skipped to the block terminator. `strict` 1
// (browsers' rules, for the code sizes 9-11 giflib refuses): a code past the next free one and a
// palette index over 255 are defects.
#include "ik_gif.h"

#include <stdlib.h>
#include <string.h>

enum { LZW_MAX_CODES = 4096 };

/// Copies `count` bytes from `source` to `target`, which starts at least `count` bytes later in
/// the same buffer (or in the literal table past the frame), 8 at a time: up to 7 bytes past
/// `target + count` are overwritten (the caller's buffer has that slack; later strings overwrite
/// them). Each word is loaded before it is stored, so a source word that reaches into the target
/// only carries bytes past the copy.
static inline void copy_forward(uint8_t *target, const uint8_t *source, size_t count) {
    for (size_t i = 0; i < count; i += 8) {
        uint64_t word;
        memcpy(&word, source + i, 8);
        memcpy(target + i, &word, 8);
    }
}

static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t word;
    memcpy(&word, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

ik_gif_lzw_status ik_gif_lzw_decode(const uint8_t *data, size_t size, size_t offset, int strict, uint8_t *output,
                                     size_t pixel_count, size_t *decoded, size_t *end) {
    *decoded = 0;
    *end = offset < size ? offset : size;
    if (offset >= size) return IK_GIF_LZW_TRUNCATED;
    // Positions are 32-bit: a GIF frame has at most 65535 x 65535 pixels, which fits.
    if (pixel_count > UINT32_MAX - IK_GIF_LZW_SLACK) return IK_GIF_LZW_BAD_CODE;
    const int code_size = data[offset];
    if (code_size < 1 || code_size > 11) return IK_GIF_LZW_BAD_CODE_SIZE;

    // The sub-blocks are joined into one run first, so that reading a code is one unaligned load
    // with no block boundary to test: `terminated` says whether a block terminator ended them
    // (else the data ends inside them), `after` where the next record starts.
    size_t joined_size = 0, p = offset + 1, after;
    int terminated = 0;
    for (;;) {
        if (p >= size) { after = size; break; }
        const size_t block = data[p++];
        if (block == 0) { terminated = 1; after = p; break; }
        const size_t available = block < size - p ? block : size - p;
        joined_size += available;
        p += available;
    }
    uint8_t *joined = malloc(joined_size + 16);
    if (!joined) return IK_GIF_LZW_BAD_CODE;
    for (size_t at = 0, q = offset + 1; at < joined_size;) {
        const size_t block = data[q++];
        const size_t available = block < size - q ? block : size - q;
        memcpy(joined + at, data + q, available);
        at += available;
        q += available;
    }
    memset(joined + joined_size, 0, 16);

    // Every table entry is a run of the buffer: a string written earlier in the frame, or for a
    // literal its byte in a table of the 256 byte values past the frame's slack. So every
    // ordinary code is the same forward copy, with no branch on whether it is a literal. A length
    // of 0 marks the codes that are not ordinary (clear, end, and literals past 255 when the code
    // size is over 8).
    uint8_t *const literals = output + pixel_count + LZW_MAX_CODES + 16;
    uint32_t position[LZW_MAX_CODES + 1];
    uint16_t length[LZW_MAX_CODES + 1];
    const int clear = 1 << code_size, end_code = clear + 1;
    for (int value = 0; value < 256; value++) literals[value] = (uint8_t)value;
    for (int code = 0; code < clear; code++) {
        position[code] = (uint32_t)(pixel_count + LZW_MAX_CODES + 16) + (uint32_t)(code & 255);
        length[code] = code < 256 ? 1 : 0;
    }
    length[clear] = 0;
    length[end_code] = 0;
    int width = code_size + 1, next = clear + 2, has_previous = 0;
    uint32_t mask = (1u << width) - 1;
    size_t previous_at = 0, previous_length = 0;

    const uint64_t total_bits = (uint64_t)joined_size * 8;
    const uint8_t *in = joined;
    uint64_t bits = 0, consumed = 0;
    int bit_count = 0;
    size_t o = 0;
    ik_gif_lzw_status status = IK_GIF_LZW_OK;

    while (o < pixel_count) {
        // Refill to 56-63 bits; past the data the run's zero padding reads as zeros, and
        // `consumed` tells a real code from one read past the end.
        if (bit_count < width) {
            if ((size_t)(in - joined) <= joined_size) {
                bits |= load_le64(in) << bit_count;
                in += (63 - bit_count) >> 3;
                bit_count |= 56;
            } else {
                bit_count = 64;
            }
        }
        const int code = (int)(bits & mask);
        bits >>= width;
        bit_count -= width;
        consumed += (uint64_t)width;
        if (consumed > total_bits) { status = terminated ? IK_GIF_LZW_SHORT_DATA : IK_GIF_LZW_TRUNCATED; break; }

        size_t count, defined_at = previous_at;
        const size_t at = o;
        if (__builtin_expect(code < next && length[code] != 0, 1)) {
            count = length[code];
            copy_forward(output + o, output + position[code], count);
        } else {
            if (code == clear) {
                width = code_size + 1;
                mask = (1u << width) - 1;
                next = clear + 2;
                has_previous = 0;
                continue;
            }
            if (code == end_code) { status = IK_GIF_LZW_EARLY_END; break; }
            if (code < clear || !has_previous || (strict && code > next)) { status = IK_GIF_LZW_BAD_CODE; goto done; }
            count = previous_length + 1;
            copy_forward(output + o, output + previous_at, previous_length);
            if (code == next) {
                // KwKwK: the previous string and its own first byte.
                output[o + previous_length] = output[previous_at];
            } else {
                // A code past the next free one: giflib's tolerated defect (the previous string
                // and the byte 2, its NO_SUCH_CODE cut to a byte); the new entry is that string.
                output[o + previous_length] = 2;
                defined_at = o;
            }
        }
        o += count;
        if (has_previous && next < LZW_MAX_CODES) {
            position[next] = (uint32_t)defined_at;
            length[next] = (uint16_t)(previous_length + 1);
            next++;
            if (next == (1 << width) && width < 12) {
                width++;
                mask = (1u << width) - 1;
            }
        }
        has_previous = 1;
        previous_at = at;
        previous_length = count;
    }
    if (o > pixel_count) o = pixel_count;
    if (status == IK_GIF_LZW_OK || status == IK_GIF_LZW_EARLY_END || status == IK_GIF_LZW_SHORT_DATA) {
        // The frame is full (or ended): the rest of its sub-blocks are skipped.
        if (status == IK_GIF_LZW_OK && !terminated) status = IK_GIF_LZW_TRAILING_TRUNCATED;
        *end = after;
    }
done:
    free(joined);
    *decoded = o;
    return status;
}

void ik_gif_draw(const uint8_t *indices, size_t decoded, int width, int height, int interlaced, int left, int top,
                 const uint32_t *palette, int transparent, uint8_t *canvas, size_t stride, int canvas_width,
                 int canvas_height) {
    if (width <= 0 || height <= 0) return;
    const size_t lines = decoded / (size_t)width;
    const int x0 = left > 0 ? left : 0;
    const int x1 = left + width < canvas_width ? left + width : canvas_width;
    if (x1 <= x0) return;
    static const int starts[4] = {0, 4, 2, 1}, steps[4] = {8, 8, 4, 2};
    size_t line = 0;
    for (int pass = 0; pass < (interlaced ? 4 : 1) && line < lines; pass++) {
        const int start = interlaced ? starts[pass] : 0, step = interlaced ? steps[pass] : 1;
        for (int y = start; y < height && line < lines; y += step, line++) {
            const int canvas_y = top + y;
            if (canvas_y < 0 || canvas_y >= canvas_height) continue;
            const uint8_t *row = indices + line * (size_t)width + (x0 - left);
            uint32_t *target = (uint32_t *)(canvas + (size_t)canvas_y * stride) + x0;
            const int count = x1 - x0;
            if (transparent < 0) {
                for (int x = 0; x < count; x++) target[x] = palette[row[x]];
            } else {
                for (int x = 0; x < count; x++) {
                    const int index = row[x];
                    if (index != transparent) target[x] = palette[index];
                }
            }
        }
    }
}
