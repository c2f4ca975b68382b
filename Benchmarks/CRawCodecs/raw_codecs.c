#include "raw_codecs.h"

#include <gif_lib.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>

void ik_raw_image_free(ik_raw_image *image) {
    for (int i = 0; i < image->frame_count; i++) free(image->frames[i]);
    free(image->frames);
    memset(image, 0, sizeof(*image));
}

static int one_frame(ik_raw_image *out, int width, int height) {
    out->frames = (unsigned char **)malloc(sizeof(unsigned char *));
    if (!out->frames) return -1;
    out->frames[0] = (unsigned char *)malloc((size_t)width * height * 4);
    if (!out->frames[0]) return -1;
    out->frame_count = 1;
    out->width = width;
    out->height = height;
    return 0;
}

// MARK: JPEG

void *ik_raw_tj_decompressor(void) { return tjInitDecompress(); }
void *ik_raw_tj_compressor(void) { return tjInitCompress(); }
void ik_raw_tj_destroy(void *handle) { if (handle) tjDestroy(handle); }

int ik_raw_jpeg_decode(void *handle, const void *data, size_t size, ik_raw_image *out) {
    int width, height, subsamp, colorspace;
    memset(out, 0, sizeof(*out));
    if (tjDecompressHeader3(handle, data, size, &width, &height, &subsamp, &colorspace) != 0) return -1;
    if (one_frame(out, width, height) != 0) return -1;
    if (tjDecompress2(handle, data, size, out->frames[0], width, width * 4, height, TJPF_RGBA, 0) != 0 &&
        tjGetErrorCode(handle) != TJERR_WARNING) {
        return -1;
    }
    return 0;
}

int ik_raw_jpeg_decode_scaled(void *handle, const void *data, size_t size, int box, ik_raw_image *out) {
    int width, height, subsamp, colorspace, count = 0;
    memset(out, 0, sizeof(*out));
    if (tjDecompressHeader3(handle, data, size, &width, &height, &subsamp, &colorspace) != 0) return -1;
    // The side that limits a fit inside box x box must stay >= box.
    double fit = (double)box / (width > height ? width : height);
    tjscalingfactor *factors = tjGetScalingFactors(&count);
    int scaled_w = width, scaled_h = height;
    for (int i = 0; i < count; i++) {
        if ((double)factors[i].num / factors[i].denom < fit || factors[i].num > factors[i].denom) continue;
        int w = TJSCALED(width, factors[i]), h = TJSCALED(height, factors[i]);
        if (w * h < scaled_w * scaled_h) { scaled_w = w; scaled_h = h; }
    }
    if (one_frame(out, scaled_w, scaled_h) != 0) return -1;
    if (tjDecompress2(handle, data, size, out->frames[0], scaled_w, scaled_w * 4, scaled_h, TJPF_RGBA, 0) != 0 &&
        tjGetErrorCode(handle) != TJERR_WARNING) {
        return -1;
    }
    return 0;
}

size_t ik_raw_jpeg_encode(void *handle, const void *rgba, int width, int height, int quality, int progressive, void **keep) {
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    int flags = progressive ? TJFLAG_PROGRESSIVE : 0;
    if (tjCompress2(handle, rgba, width, width * 4, height, TJPF_RGBA, &jpeg, &size, TJSAMP_420, quality, flags) != 0) {
        return 0;
    }
    if (keep) *keep = jpeg; else tjFree(jpeg);
    return size;
}

// MARK: PNG

typedef struct { const unsigned char *data; size_t size, offset; } mem_reader;

static void png_mem_read(png_structp png, png_bytep out, size_t length) {
    mem_reader *reader = (mem_reader *)png_get_io_ptr(png);
    if (length > reader->size - reader->offset) png_error(png, "truncated");
    memcpy(out, reader->data + reader->offset, length);
    reader->offset += length;
}

int ik_raw_png_decode(const void *data, size_t size, ik_raw_image *out) {
    memset(out, 0, sizeof(*out));
    mem_reader reader = {data, size, 0};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    png_set_read_fn(png, &reader, png_mem_read);
    png_read_info(png, info);
    png_uint_32 width, height;
    int depth, color, interlace;
    png_get_IHDR(png, info, &width, &height, &depth, &color, &interlace, NULL, NULL);
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (one_frame(out, (int)width, (int)height) != 0) png_error(png, "oom");
    rows = (png_bytep *)malloc(sizeof(png_bytep) * height);
    for (png_uint_32 y = 0; y < height; y++) rows[y] = out->frames[0] + (size_t)y * width * 4;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}

typedef struct { unsigned char *data; size_t size, capacity; } mem_writer;

static void png_mem_write(png_structp png, png_bytep bytes, size_t length) {
    mem_writer *writer = (mem_writer *)png_get_io_ptr(png);
    if (writer->size + length > writer->capacity) {
        writer->capacity = (writer->size + length) * 2;
        writer->data = (unsigned char *)realloc(writer->data, writer->capacity);
    }
    memcpy(writer->data + writer->size, bytes, length);
    writer->size += length;
}

static void png_mem_flush(png_structp png) { (void)png; }

size_t ik_raw_png_encode(const void *rgba, int width, int height, int alpha) {
    mem_writer writer = {NULL, 0, 0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(writer.data);
        return 0;
    }
    png_set_write_fn(png, &writer, png_mem_write, png_mem_flush);
    png_set_compression_level(png, 6);
    png_set_IHDR(png, info, width, height, 8, alpha ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    if (!alpha) png_set_filler(png, 0, PNG_FILLER_AFTER);
    for (int y = 0; y < height; y++) png_write_row(png, (png_const_bytep)rgba + (size_t)y * width * 4);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(writer.data);
    return writer.size;
}

// MARK: GIF

static int gif_mem_read(GifFileType *gif, GifByteType *out, int length) {
    mem_reader *reader = (mem_reader *)gif->UserData;
    size_t available = reader->size - reader->offset;
    size_t count = (size_t)length < available ? (size_t)length : available;
    memcpy(out, reader->data + reader->offset, count);
    reader->offset += count;
    return (int)count;
}

int ik_raw_gif_decode(const void *data, size_t size, ik_raw_image *out) {
    memset(out, 0, sizeof(*out));
    mem_reader reader = {data, size, 0};
    int error = 0;
    GifFileType *gif = DGifOpen(&reader, gif_mem_read, &error);
    if (!gif) return -1;
    if (DGifSlurp(gif) != GIF_OK || gif->ImageCount < 1) {
        DGifCloseFile(gif, &error);
        return -1;
    }
    int width = gif->SWidth, height = gif->SHeight;
    size_t bytes = (size_t)width * height * 4;
    unsigned char *canvas = (unsigned char *)calloc(1, bytes);
    out->frames = (unsigned char **)calloc((size_t)gif->ImageCount, sizeof(unsigned char *));
    out->width = width;
    out->height = height;
    for (int i = 0; i < gif->ImageCount; i++) {
        SavedImage *image = &gif->SavedImages[i];
        GraphicsControlBlock gcb = {0, false, 0, NO_TRANSPARENT_COLOR};
        DGifSavedExtensionToGCB(gif, i, &gcb);
        ColorMapObject *map = image->ImageDesc.ColorMap ? image->ImageDesc.ColorMap : gif->SColorMap;
        int left = image->ImageDesc.Left, top = image->ImageDesc.Top;
        int w = image->ImageDesc.Width, h = image->ImageDesc.Height;
        for (int y = 0; y < h; y++) {
            int cy = top + y;
            if (cy < 0 || cy >= height) continue;
            const GifByteType *row = image->RasterBits + (size_t)y * w;
            unsigned char *dst = canvas + (size_t)cy * width * 4;
            for (int x = 0; x < w; x++) {
                int cx = left + x, index = row[x];
                if (cx >= width || index == gcb.TransparentColor) continue;
                GifColorType c = (map && index < map->ColorCount) ? map->Colors[index] : (GifColorType){0, 0, 0};
                unsigned char *p = dst + cx * 4;
                p[0] = c.Red; p[1] = c.Green; p[2] = c.Blue; p[3] = 255;
            }
        }
        out->frames[i] = (unsigned char *)malloc(bytes);
        memcpy(out->frames[i], canvas, bytes);
        out->frame_count = i + 1;
        if (gcb.DisposalMode == DISPOSE_BACKGROUND) {
            for (int y = top; y < top + h && y < height; y++) memset(canvas + ((size_t)y * width + left) * 4, 0, (size_t)w * 4);
        }
    }
    free(canvas);
    DGifCloseFile(gif, &error);
    return 0;
}

// MARK: WebP

int ik_raw_webp_decode(const void *data, size_t size, ik_raw_image *out) {
    memset(out, 0, sizeof(*out));
    WebPBitstreamFeatures features;
    if (WebPGetFeatures(data, size, &features) != VP8_STATUS_OK) return -1;
    if (!features.has_animation) {
        if (one_frame(out, features.width, features.height) != 0) return -1;
        size_t stride = (size_t)features.width * 4;
        if (!WebPDecodeRGBAInto(data, size, out->frames[0], stride * features.height, (int)stride)) return -1;
        return 0;
    }
    WebPAnimDecoderOptions options;
    WebPAnimDecoderOptionsInit(&options);
    options.color_mode = MODE_RGBA;
    options.use_threads = 0;
    WebPData webp = {data, size};
    WebPAnimDecoder *decoder = WebPAnimDecoderNew(&webp, &options);
    if (!decoder) return -1;
    WebPAnimInfo info;
    WebPAnimDecoderGetInfo(decoder, &info);
    out->width = info.canvas_width;
    out->height = info.canvas_height;
    out->frames = (unsigned char **)calloc(info.frame_count, sizeof(unsigned char *));
    size_t bytes = (size_t)info.canvas_width * info.canvas_height * 4;
    while (WebPAnimDecoderHasMoreFrames(decoder)) {
        uint8_t *canvas;
        int timestamp;
        if (!WebPAnimDecoderGetNext(decoder, &canvas, &timestamp)) break;
        out->frames[out->frame_count] = (unsigned char *)malloc(bytes);
        memcpy(out->frames[out->frame_count], canvas, bytes);
        out->frame_count++;
    }
    WebPAnimDecoderDelete(decoder);
    return out->frame_count > 0 ? 0 : -1;
}

size_t ik_raw_webp_encode(const void *rgba, int width, int height, float quality) {
    uint8_t *output = NULL;
    size_t size = WebPEncodeRGBA(rgba, width, height, width * 4, quality, &output);
    WebPFree(output);
    return size;
}
