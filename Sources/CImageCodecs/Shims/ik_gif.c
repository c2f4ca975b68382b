// GIF image data: LZW decoding straight from the sub-blocks, and drawing palette indices onto an
// RGBA canvas.
//
// giflib decodes a line at a time through a prefix/suffix table, pushing each string on a stack
// and popping it in reverse. Here every table entry instead remembers where its string was last
// written in the frame's output (GIF's LZW is LZ77 in disguise: the string of a new code is the
// previous code's string plus the next byte, and both were just written side by side), so a code
// becomes one forward copy of earlier output, 8 bytes at a time. The semantics are giflib's
// (`strict` 0): a non-literal code right after a clear, an end code or a block terminator before
// the frame is full are defects; a code past the next free one is giflib's tolerated defect (the
// previous string and the byte 2, giflib's NO_SUCH_CODE cut to a byte); a full table keeps being
// used (deferred clear); data after the last pixel is skipped to the block terminator. `strict` 1
// (browsers' rules, for the code sizes 9-11 giflib refuses): a code past the next free one and a
// palette index over 255 are defects.
#include "ik_gif.h"

#include <string.h>

enum { LZW_MAX_CODES = 4096 };

/// Copies `count` bytes from `source` to `target`, which starts at least `count` bytes later in
/// the same buffer, 8 at a time: up to 7 bytes past `target + count` are overwritten (the
/// caller's buffer has that slack; later strings overwrite them). Each word is loaded before it
/// is stored, so a source word that reaches into the target only carries bytes past the copy.
static inline void copy_forward(uint8_t *target, const uint8_t *source, size_t count) {
    for (size_t i = 0; i < count; i += 8) {
        uint64_t word;
        memcpy(&word, source + i, 8);
        memcpy(target + i, &word, 8);
    }
}

ik_gif_lzw_status ik_gif_lzw_decode(const uint8_t *data, size_t size, size_t offset, int strict, uint8_t *output,
                                     size_t pixel_count, size_t *decoded, size_t *end) {
    *decoded = 0;
    *end = offset < size ? offset : size;
    if (offset >= size) return IK_GIF_LZW_TRUNCATED;
    // Positions are 32-bit: a GIF frame has at most 65535 x 65535 pixels, which fits.
    if (pixel_count > UINT32_MAX) return IK_GIF_LZW_BAD_CODE;
    const int code_size = data[offset];
    if (code_size < 1 || code_size > 11) return IK_GIF_LZW_BAD_CODE_SIZE;
    size_t p = offset + 1;

    uint32_t position[LZW_MAX_CODES];
    uint16_t length[LZW_MAX_CODES];
    const int clear = 1 << code_size, end_code = clear + 1;
    int width = code_size + 1, next = clear + 2, previous = -1;
    uint32_t mask = (1u << width) - 1;
    size_t previous_at = 0, previous_length = 0;

    uint64_t bits = 0;
    int bit_count = 0;
    size_t block_left = 0;
    size_t o = 0;
    ik_gif_lzw_status status = IK_GIF_LZW_OK;

    while (o < pixel_count) {
        while (bit_count < width) {
            if (block_left == 0) {
                if (p >= size) { status = IK_GIF_LZW_TRUNCATED; goto done; }
                block_left = data[p++];
                if (block_left == 0) { status = IK_GIF_LZW_SHORT_DATA; *end = p; goto done; }
            }
            if (p >= size) { status = IK_GIF_LZW_TRUNCATED; goto done; }
            // Whole bytes while both the block and the buffer have room.
            size_t take = block_left < (size_t)((64 - bit_count) >> 3) ? block_left : (size_t)((64 - bit_count) >> 3);
            if (take > size - p) take = size - p;
            for (size_t i = 0; i < take; i++) {
                bits |= (uint64_t)data[p++] << bit_count;
                bit_count += 8;
            }
            block_left -= take;
        }
        const int code = (int)(bits & mask);
        bits >>= width;
        bit_count -= width;

        if (code == clear) {
            width = code_size + 1;
            mask = (1u << width) - 1;
            next = clear + 2;
            previous = -1;
            continue;
        }
        if (code == end_code) { status = IK_GIF_LZW_EARLY_END; goto skip; }
        if ((previous < 0 && code >= clear) || (strict && code > next)) { status = IK_GIF_LZW_BAD_CODE; goto done; }

        const size_t at = o;
        size_t count;
        // Where the string of the code defined now lies: the previous string and the first byte
        // written now; for giflib's tolerated defect, the string written now.
        size_t defined_at = previous_at;
        if (code < clear) {
            if (code > 255) { status = IK_GIF_LZW_BAD_CODE; goto done; }
            output[o] = (uint8_t)code;
            count = 1;
        } else if (code > next) {
            count = previous_length + 1 < pixel_count - o ? previous_length + 1 : pixel_count - o;
            copy_forward(output + o, output + previous_at, count < previous_length ? count : previous_length);
            if (count > previous_length) output[o + previous_length] = 2;
            defined_at = o;
        } else {
            // `next` itself (KwKwK): the previous string and its own first byte.
            const size_t from = code == next ? previous_at : position[code];
            const size_t string_length = code == next ? previous_length + 1 : length[code];
            count = string_length < pixel_count - o ? string_length : pixel_count - o;
            const uint8_t *source = output + from;
            uint8_t *target = output + o;
            if (code == next) {
                // The string ends with its own first byte: the previous string, then that byte.
                copy_forward(target, source, count < previous_length ? count : previous_length);
                if (count > previous_length) target[previous_length] = source[0];
            } else {
                copy_forward(target, source, count);
            }
        }
        o += count;
        if (previous >= 0 && next < LZW_MAX_CODES) {
            position[next] = (uint32_t)defined_at;
            length[next] = (uint16_t)(previous_length + 1);
            next++;
            if (next == (1 << width) && width < 12) {
                width++;
                mask = (1u << width) - 1;
            }
        }
        previous = code;
        previous_at = at;
        previous_length = count;
    }
skip:
    // The frame is full (or ended): the rest of its sub-blocks are skipped.
    if (block_left > size - p) { p = size; status = status == IK_GIF_LZW_OK ? IK_GIF_LZW_TRAILING_TRUNCATED : status; }
    else p += block_left;
    for (;;) {
        if (p >= size) {
            if (status == IK_GIF_LZW_OK) status = IK_GIF_LZW_TRAILING_TRUNCATED;
            break;
        }
        const size_t block = data[p++];
        if (block == 0) break;
        if (block > size - p) {
            p = size;
            if (status == IK_GIF_LZW_OK) status = IK_GIF_LZW_TRAILING_TRUNCATED;
            break;
        }
        p += block;
    }
    *end = p;
done:
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
