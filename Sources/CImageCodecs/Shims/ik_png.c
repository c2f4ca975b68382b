#include "ik_png.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

// Every libpng call that can longjmp runs inside the function that set the jump buffer, so a
// longjmp never crosses a Swift frame. The Swift allocation callback runs between libpng calls.

typedef struct {
    const unsigned char *data;
    size_t size;
    size_t offset;
    int truncated;
    char *message;
    size_t message_size;
} ik_png_reader;

static void ik_png_error(png_structp png, png_const_charp text) {
    ik_png_reader *reader = (ik_png_reader *)png_get_error_ptr(png);
    if (reader && reader->message_size > 0 && reader->message[0] == 0) {
        snprintf(reader->message, reader->message_size, "%s", text);
    }
    png_longjmp(png, 1);
}

static void ik_png_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text;
}

static void ik_png_read(png_structp png, png_bytep out, size_t length) {
    ik_png_reader *reader = (ik_png_reader *)png_get_io_ptr(png);
    if (length > reader->size - reader->offset) {
        reader->truncated = 1;
        png_error(png, "PNG data ends before the image does");
    }
    memcpy(out, reader->data + reader->offset, length);
    reader->offset += length;
}

// Ancillary chunks ImageKit never uses: skipping them saves their inflate cost and defuses
// compressed-text bombs.
static const png_byte ik_png_ignored_chunks[] = {
    'b', 'K', 'G', 'D', '\0', 'c', 'H', 'R', 'M', '\0', 'e', 'X', 'I', 'f', '\0',
    'g', 'A', 'M', 'A', '\0', 'h', 'I', 'S', 'T', '\0', 'i', 'C', 'C', 'P', '\0',
    'i', 'T', 'X', 't', '\0', 'o', 'F', 'F', 's', '\0', 'p', 'C', 'A', 'L', '\0',
    'p', 'H', 'Y', 's', '\0', 's', 'B', 'I', 'T', '\0', 's', 'C', 'A', 'L', '\0',
    's', 'P', 'L', 'T', '\0', 's', 'R', 'G', 'B', '\0', 't', 'E', 'X', 't', '\0',
    't', 'I', 'M', 'E', '\0', 'z', 'T', 'X', 't', '\0',
};

/// Applies ImageKit's transforms (everything to RGBA8, straight alpha; RGBA16 in native byte
/// order when `deep`) and fills `info`.
static void ik_png_setup_transforms_depth(png_structp png, png_infop png_info, ik_png_info *info, int deep) {
    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(png, png_info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    // libpng 1.6.39 drops a tRNS chunk that comes before PLTE but leaves its valid flag set:
    // only a tRNS with entries adds alpha (otherwise the rows would be RGB, not RGBA).
    png_bytep trans_alpha = NULL;
    int num_trans = 0;
    png_color_16p trans_color = NULL;
    int has_trns = png_get_valid(png, png_info, PNG_INFO_tRNS) != 0 &&
                   png_get_tRNS(png, png_info, &trans_alpha, &num_trans, &trans_color) != 0 && num_trans > 0;
    info->width = width;
    info->height = height;
    info->bit_depth = bit_depth;
    info->color_type = color_type;
    info->interlaced = interlace != PNG_INTERLACE_NONE;
    info->has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || has_trns;
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (has_trns) png_set_tRNS_to_alpha(png);
    if (deep) {
        if (bit_depth < 16) png_set_expand_16(png);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        png_set_swap(png);
#endif
    } else if (bit_depth == 16) {
        png_set_strip_16(png);
    }
    if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    if (!info->has_alpha) png_set_add_alpha(png, deep ? 0xFFFF : 0xFF, PNG_FILLER_AFTER);
}

static void ik_png_setup_transforms(png_structp png, png_infop png_info, ik_png_info *info) {
    ik_png_setup_transforms_depth(png, png_info, info, 0);
}

static void ik_png_configure_reader(png_structp png, ik_png_reader *reader, int ignore_crc) {
    png_set_read_fn(png, reader, ik_png_read);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, ik_png_ignored_chunks,
                                (int)(sizeof(ik_png_ignored_chunks) / 5));
    if (ignore_crc) png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
    // Dimensions are policed by ImageKit's own limits in the callbacks.
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
}

/// Creates the read and info structs for reading `data` (no libpng call here can longjmp: the
/// caller sets its own jump buffer before the first one that can). Returns 0 when out of memory.
static int ik_png_create_reader(ik_png_reader *reader, const void *data, size_t size, ik_png_info *info,
                                char *message, size_t message_size, png_structp *png, png_infop *png_info) {
    if (message_size > 0) message[0] = 0;
    memset(info, 0, sizeof(*info));
    *reader = (ik_png_reader){data, size, 0, 0, message, message_size};
    *png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, ik_png_error, ik_png_warning);
    if (!*png) return 0;
    *png_info = png_create_info_struct(*png);
    if (!*png_info) {
        png_destroy_read_struct(png, NULL, NULL);
        return 0;
    }
    return 1;
}

ik_status ik_png_decode_rows(const void *data, size_t size, ik_png_header_fn header, ik_png_row_fn row,
                             void *context, ik_png_info *info, char *message, size_t message_size) {
    ik_png_reader reader;
    png_structp png = NULL;
    png_infop png_info = NULL;
    if (!ik_png_create_reader(&reader, data, size, info, message, message_size, &png, &png_info)) return IK_ERR_INTERNAL;
    unsigned char *volatile buffer = NULL;
    volatile ik_status refused = IK_OK;
    if (setjmp(png_jmpbuf(png))) {
        free(buffer);
        png_destroy_read_struct(&png, &png_info, NULL);
        if (refused != IK_OK) return refused;
        return reader.truncated ? IK_ERR_TRUNCATED : IK_ERR_DECODE;
    }
    ik_png_configure_reader(png, &reader, 0);
    png_read_info(png, png_info);
    ik_png_setup_transforms(png, png_info, info);
    if (info->interlaced) {
        snprintf(message, message_size, "interlaced");
        refused = IK_ERR_DECODE;
        png_error(png, "interlaced");
    }
    png_read_update_info(png, png_info);
    if (png_get_rowbytes(png, png_info) != (size_t)info->width * 4) {
        snprintf(message, message_size, "unexpected PNG row layout");
        refused = IK_ERR_DECODE;
        png_error(png, "unexpected row layout");
    }
    if (header(context, info) != 0) {
        refused = IK_ERR_REFUSED;
        png_error(png, "refused");
    }
    buffer = (unsigned char *)malloc((size_t)info->width * 4);
    if (!buffer) {
        refused = IK_ERR_INTERNAL;
        png_error(png, "out of memory");
    }
    for (png_uint_32 y = 0; y < info->height; y++) {
        png_read_row(png, buffer, NULL);
        row(context, buffer, y);
    }
    png_read_end(png, NULL);
    free(buffer);
    png_destroy_read_struct(&png, &png_info, NULL);
    return IK_OK;
}

static ik_status ik_png_decode_whole(const void *data, size_t size, int ignore_crc, int deep, ik_png_alloc_fn alloc,
                                    void *context, ik_png_info *info, char *message, size_t message_size) {
    const size_t pixel_bytes = deep ? 8 : 4;
    ik_png_reader reader;
    png_structp png = NULL;
    png_infop png_info = NULL;
    if (!ik_png_create_reader(&reader, data, size, info, message, message_size, &png, &png_info)) return IK_ERR_INTERNAL;
    // Volatile: read after a longjmp back into this frame.
    png_bytep *volatile rows = NULL;
    volatile ik_status refused = IK_OK;

    if (setjmp(png_jmpbuf(png))) {
        free(rows);
        png_destroy_read_struct(&png, &png_info, NULL);
        if (refused != IK_OK) return refused;
        return reader.truncated ? IK_ERR_TRUNCATED : IK_ERR_DECODE;
    }

    ik_png_configure_reader(png, &reader, ignore_crc);
    png_read_info(png, png_info);
    ik_png_setup_transforms_depth(png, png_info, info, deep);
    png_uint_32 width = info->width, height = info->height;
    int passes = png_set_interlace_handling(png);
    (void)passes;
    png_read_update_info(png, png_info);

    if (png_get_rowbytes(png, png_info) != (size_t)width * pixel_bytes) {
        snprintf(message, message_size, "unexpected PNG row layout");
        refused = IK_ERR_DECODE;
        png_error(png, "unexpected row layout");
    }

    size_t stride = 0;
    unsigned char *first_row = (unsigned char *)alloc(context, info, &stride);
    if (!first_row || stride < (size_t)width * pixel_bytes) {
        refused = IK_ERR_REFUSED;
        png_error(png, "refused");
    }
    rows = (png_bytep *)malloc(sizeof(png_bytep) * (height ? height : 1));
    if (!rows) {
        refused = IK_ERR_INTERNAL;
        png_error(png, "out of memory");
    }
    for (png_uint_32 y = 0; y < height; y++) rows[y] = first_row + (size_t)y * stride;
    png_read_image(png, rows);
    png_read_end(png, NULL);

    free(rows);
    png_destroy_read_struct(&png, &png_info, NULL);
    return IK_OK;
}

ik_status ik_png_decode_rgba(const void *data, size_t size, int ignore_crc, ik_png_alloc_fn alloc,
                             void *context, ik_png_info *info, char *message, size_t message_size) {
    return ik_png_decode_whole(data, size, ignore_crc, 0, alloc, context, info, message, message_size);
}

ik_status ik_png_decode_rgba16(const void *data, size_t size, ik_png_alloc_fn alloc, void *context,
                               ik_png_info *info, char *message, size_t message_size) {
    return ik_png_decode_whole(data, size, 0, 1, alloc, context, info, message, message_size);
}

void ik_free(void *pointer) { free(pointer); }
