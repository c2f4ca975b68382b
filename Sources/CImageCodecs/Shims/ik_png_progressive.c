#include "ik_png.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

// libpng's progressive reader calls back from inside png_process_data; every call into libpng,
// including those from the callbacks, happens under the setjmp in ik_png_progressive_feed.

struct ik_png_progressive {
    png_structp png;
    png_infop info;
    ik_png_progressive_alloc_fn alloc;
    void *context;
    ik_png_info header;
    unsigned char *pixels;
    size_t stride;
    int pass;
    int passes_done;
    uint32_t rows;
    int finished;
    int refused;
    char *message;
    size_t message_size;
};

static void progressive_error(png_structp png, png_const_charp text) {
    ik_png_progressive *decoder = (ik_png_progressive *)png_get_error_ptr(png);
    if (decoder && decoder->message && decoder->message_size > 0 && decoder->message[0] == 0) {
        snprintf(decoder->message, decoder->message_size, "%s", text);
    }
    png_longjmp(png, 1);
}

static void progressive_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text;
}

static void progressive_info(png_structp png, png_infop info) {
    ik_png_progressive *decoder = (ik_png_progressive *)png_get_progressive_ptr(png);
    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    int has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    decoder->header.width = width;
    decoder->header.height = height;
    decoder->header.bit_depth = bit_depth;
    decoder->header.color_type = color_type;
    decoder->header.interlaced = interlace != PNG_INTERLACE_NONE;
    decoder->header.has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || has_trns;
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (has_trns) png_set_tRNS_to_alpha(png);
    if (bit_depth == 16) png_set_strip_16(png);
    if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    if (!decoder->header.has_alpha) png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)width * 4) png_error(png, "unexpected PNG row layout");
    size_t stride = 0;
    decoder->pixels = (unsigned char *)decoder->alloc(decoder->context, &decoder->header, &stride);
    if (!decoder->pixels || stride < (size_t)width * 4) {
        decoder->refused = 1;
        png_error(png, "refused");
    }
    decoder->stride = stride;
}

static void progressive_row(png_structp png, png_bytep row, png_uint_32 row_number, int pass) {
    ik_png_progressive *decoder = (ik_png_progressive *)png_get_progressive_ptr(png);
    if (!row || row_number >= decoder->header.height) return;
    if (pass != decoder->pass) {
        decoder->passes_done = pass;
        decoder->pass = pass;
        decoder->rows = 0;
    }
    png_progressive_combine_row(png, decoder->pixels + (size_t)row_number * decoder->stride, row);
    if (row_number + 1 > decoder->rows) decoder->rows = row_number + 1;
}

static void progressive_end(png_structp png, png_infop info) {
    (void)info;
    ik_png_progressive *decoder = (ik_png_progressive *)png_get_progressive_ptr(png);
    decoder->finished = 1;
    decoder->passes_done = decoder->header.interlaced ? 7 : 1;
}

ik_png_progressive *ik_png_progressive_new(ik_png_progressive_alloc_fn alloc, void *context) {
    ik_png_progressive *decoder = (ik_png_progressive *)calloc(1, sizeof(ik_png_progressive));
    if (!decoder) return NULL;
    decoder->alloc = alloc;
    decoder->context = context;
    decoder->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, decoder, progressive_error, progressive_warning);
    if (!decoder->png) {
        free(decoder);
        return NULL;
    }
    decoder->info = png_create_info_struct(decoder->png);
    if (!decoder->info) {
        png_destroy_read_struct(&decoder->png, NULL, NULL);
        free(decoder);
        return NULL;
    }
    return decoder;
}

ik_status ik_png_progressive_feed(ik_png_progressive *decoder, const void *data, size_t size, char *message,
                                  size_t message_size) {
    if (message_size > 0) message[0] = 0;
    decoder->message = message;
    decoder->message_size = message_size;
    if (setjmp(png_jmpbuf(decoder->png))) {
        decoder->message = NULL;
        return decoder->refused ? IK_ERR_REFUSED : IK_ERR_DECODE;
    }
    if (png_get_progressive_ptr(decoder->png) != decoder) {
        png_set_progressive_read_fn(decoder->png, decoder, progressive_info, progressive_row, progressive_end);
        png_set_keep_unknown_chunks(decoder->png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
        png_set_user_limits(decoder->png, 0x7fffffff, 0x7fffffff);
    }
    png_process_data(decoder->png, decoder->info, (png_bytep)data, size);
    decoder->message = NULL;
    return IK_OK;
}

void ik_png_progressive_progress(const ik_png_progressive *decoder, int *pass, uint32_t *rows, int *passes_done,
                                 int *finished) {
    *pass = decoder->pass;
    *rows = decoder->rows;
    *passes_done = decoder->passes_done;
    *finished = decoder->finished;
}

const ik_png_info *ik_png_progressive_info(const ik_png_progressive *decoder) { return &decoder->header; }

void ik_png_progressive_free(ik_png_progressive *decoder) {
    if (!decoder) return;
    png_destroy_read_struct(&decoder->png, &decoder->info, NULL);
    free(decoder);
}
