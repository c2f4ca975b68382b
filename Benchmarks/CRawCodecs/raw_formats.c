// The "raw library" side of the bench for the photo formats: each decoder called the way a C
// program would (into a fresh malloc'ed RGBA8 buffer, one thread), plus the writers that make
// the bench's synthetic HEIC, JPEG XL and TIFF files and the ICC profiles of the colour rows.
// A library whose package trait is off compiles to stubs that return -1 (Package.swift defines
// IK_BENCH_<TRAIT> for the enabled ones).

#include "raw_codecs.h"

#include <lcms2.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

#if defined(IK_BENCH_HEIF)
#include <libheif/heif.h>
#define IK_HAS_HEIF 1
#endif
#if defined(IK_BENCH_AVIF)
#include <avif/avif.h>
#define IK_HAS_AVIF 1
#endif
#if defined(IK_BENCH_JXL)
#include <jxl/decode.h>
#include <jxl/encode.h>
#define IK_HAS_JXL 1
#endif

static int alloc_frame(ik_raw_image *out, int width, int height) {
    memset(out, 0, sizeof(*out));
    out->frames = (unsigned char **)malloc(sizeof(unsigned char *));
    if (!out->frames) return -1;
    out->frames[0] = (unsigned char *)malloc((size_t)width * height * 4);
    if (!out->frames[0]) { free(out->frames); out->frames = NULL; return -1; }
    out->frame_count = 1;
    out->width = width;
    out->height = height;
    return 0;
}

// MARK: - HEIF

int ik_raw_heif_decode(const void *data, size_t size, ik_raw_image *out) {
#ifdef IK_HAS_HEIF
    memset(out, 0, sizeof(*out));
    struct heif_context *ctx = heif_context_alloc();
    heif_context_set_max_decoding_threads(ctx, 0);
    struct heif_image_handle *handle = NULL;
    struct heif_image *image = NULL;
    int status = -1;
    if (heif_context_read_from_memory_without_copy(ctx, data, size, NULL).code != heif_error_Ok) goto done;
    if (heif_context_get_primary_image_handle(ctx, &handle).code != heif_error_Ok) goto done;
    struct heif_decoding_options *options = heif_decoding_options_alloc();
    options->convert_hdr_to_8bit = 1;
    struct heif_error error = heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, options);
    heif_decoding_options_free(options);
    if (error.code != heif_error_Ok) goto done;
    int width = heif_image_get_width(image, heif_channel_interleaved), height = heif_image_get_height(image, heif_channel_interleaved);
    int stride = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    if (!plane || alloc_frame(out, width, height) != 0) goto done;
    for (int y = 0; y < height; y++) memcpy(out->frames[0] + (size_t)y * width * 4, plane + (size_t)y * stride, (size_t)width * 4);
    status = 0;
done:
    if (image) heif_image_release(image);
    if (handle) heif_image_handle_release(handle);
    heif_context_free(ctx);
    return status;
#else
    (void)data; (void)size; (void)out;
    return -1;
#endif
}

#ifdef IK_HAS_HEIF
struct memory_writer { uint8_t *bytes; size_t size; };
static struct heif_error write_to_memory(struct heif_context *ctx, const void *data, size_t size, void *userdata) {
    (void)ctx;
    struct memory_writer *writer = (struct memory_writer *)userdata;
    writer->bytes = (uint8_t *)malloc(size);
    memcpy(writer->bytes, data, size);
    writer->size = size;
    struct heif_error ok = {heif_error_Ok, heif_suberror_Unspecified, "ok"};
    return ok;
}
#endif

size_t ik_raw_heif_encode(const void *rgba, int width, int height, int quality, void **output) {
#ifdef IK_HAS_HEIF
    *output = NULL;
    struct heif_context *ctx = heif_context_alloc();
    struct heif_encoder *encoder = NULL;
    struct heif_image *image = NULL;
    struct memory_writer writer = {NULL, 0};
    if (heif_context_get_encoder_for_format(ctx, heif_compression_HEVC, &encoder).code != heif_error_Ok) goto done;
    heif_encoder_set_lossy_quality(encoder, quality);
    heif_encoder_set_parameter_string(encoder, "preset", "ultrafast");
    if (heif_image_create(width, height, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image).code != heif_error_Ok) goto done;
    heif_image_add_plane(image, heif_channel_interleaved, width, height, 8);
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
    for (int y = 0; y < height; y++) {
        const uint8_t *source = (const uint8_t *)rgba + (size_t)y * width * 4;
        for (int x = 0; x < width; x++) memcpy(plane + (size_t)y * stride + x * 3, source + x * 4, 3);
    }
    if (heif_context_encode_image(ctx, image, encoder, NULL, NULL).code != heif_error_Ok) goto done;
    struct heif_writer w = {1, write_to_memory};
    heif_context_write(ctx, &w, &writer);
done:
    if (image) heif_image_release(image);
    if (encoder) heif_encoder_release(encoder);
    heif_context_free(ctx);
    *output = writer.bytes;
    return writer.size;
#else
    (void)rgba; (void)width; (void)height; (void)quality; *output = NULL;
    return 0;
#endif
}

// MARK: - AVIF

#ifdef IK_HAS_AVIF
/// A one-thread libavif decoder with the first image decoded, or NULL (destroyed).
static avifDecoder *first_avif_image(const void *data, size_t size) {
    avifDecoder *decoder = avifDecoderCreate();
    decoder->maxThreads = 1;
    decoder->ignoreExif = decoder->ignoreXMP = AVIF_TRUE;
    if (avifDecoderSetIOMemory(decoder, (const uint8_t *)data, size) != AVIF_RESULT_OK ||
        avifDecoderParse(decoder) != AVIF_RESULT_OK || avifDecoderNextImage(decoder) != AVIF_RESULT_OK) {
        avifDecoderDestroy(decoder);
        return NULL;
    }
    return decoder;
}
#endif

int ik_raw_avif_decode(const void *data, size_t size, ik_raw_image *out) {
#ifdef IK_HAS_AVIF
    memset(out, 0, sizeof(*out));
    avifDecoder *decoder = first_avif_image(data, size);
    if (!decoder) return -1;
    int status = -1;
    if (alloc_frame(out, (int)decoder->image->width, (int)decoder->image->height) != 0) goto done;
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, decoder->image);
    rgb.format = AVIF_RGB_FORMAT_RGBA;
    rgb.depth = 8;
    rgb.pixels = out->frames[0];
    rgb.rowBytes = (uint32_t)out->width * 4;
    if (avifImageYUVToRGB(decoder->image, &rgb) != AVIF_RESULT_OK) { ik_raw_image_free(out); goto done; }
    status = 0;
done:
    avifDecoderDestroy(decoder);
    return status;
#else
    (void)data; (void)size; (void)out;
    return -1;
#endif
}

int ik_raw_avif_decode16(const void *data, size_t size, uint16_t **samples, int *width, int *height) {
#ifdef IK_HAS_AVIF
    *samples = NULL;
    avifDecoder *decoder = first_avif_image(data, size);
    if (!decoder) return -1;
    int status = -1;
    *width = (int)decoder->image->width;
    *height = (int)decoder->image->height;
    *samples = (uint16_t *)malloc((size_t)*width * *height * 8);
    if (!*samples) goto done;
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, decoder->image);
    rgb.format = AVIF_RGB_FORMAT_RGBA;
    rgb.depth = decoder->image->depth > 8 ? decoder->image->depth : 10;
    rgb.pixels = (uint8_t *)*samples;
    rgb.rowBytes = (uint32_t)*width * 8;
    if (avifImageYUVToRGB(decoder->image, &rgb) != AVIF_RESULT_OK) {
        free(*samples);
        *samples = NULL;
        goto done;
    }
    status = 0;
done:
    avifDecoderDestroy(decoder);
    return status;
#else
    (void)data; (void)size; (void)samples; (void)width; (void)height;
    return -1;
#endif
}

#ifdef IK_HAS_AVIF
/// libavif's encoder straight (one quantizer, one thread): the output's size, and the bytes in
/// `*output` (malloc'ed) when `output` is not NULL.
static size_t encode_avif(avifImage *image, int quantizer, int speed, void **output) {
    avifEncoder *encoder = avifEncoderCreate();
    encoder->maxThreads = 1;
    encoder->speed = speed;
    encoder->minQuantizer = encoder->maxQuantizer = quantizer;
    avifRWData written = AVIF_DATA_EMPTY;
    size_t size = 0;
    if (avifEncoderWrite(encoder, image, &written) == AVIF_RESULT_OK) {
        size = written.size;
        if (output) {
            *output = malloc(written.size);
            if (*output) memcpy(*output, written.data, written.size);
            else size = 0;
        }
    }
    avifRWDataFree(&written);
    avifEncoderDestroy(encoder);
    return size;
}
#endif

size_t ik_raw_avif_encode_pq(const uint16_t *rgb10, int width, int height, void **output) {
#ifdef IK_HAS_AVIF
    *output = NULL;
    avifImage *image = avifImageCreate((uint32_t)width, (uint32_t)height, 10, AVIF_PIXEL_FORMAT_YUV420);
    image->colorPrimaries = AVIF_COLOR_PRIMARIES_BT2020;
    image->transferCharacteristics = AVIF_TRANSFER_CHARACTERISTICS_SMPTE2084;
    image->matrixCoefficients = AVIF_MATRIX_COEFFICIENTS_BT2020_NCL;
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, image);
    rgb.format = AVIF_RGB_FORMAT_RGB;
    rgb.depth = 10;
    rgb.pixels = (uint8_t *)rgb10;
    rgb.rowBytes = (uint32_t)width * 6;
    size_t size = avifImageRGBToYUV(image, &rgb) == AVIF_RESULT_OK ? encode_avif(image, 20, 10, output) : 0;
    avifImageDestroy(image);
    return size;
#else
    (void)rgb10; (void)width; (void)height; *output = NULL;
    return 0;
#endif
}

size_t ik_raw_avif_encode(const void *rgba, int width, int height, int quantizer, int speed) {
#ifdef IK_HAS_AVIF
    avifImage *image = avifImageCreate((uint32_t)width, (uint32_t)height, 8, AVIF_PIXEL_FORMAT_YUV420);
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, image);
    rgb.format = AVIF_RGB_FORMAT_RGBA;
    rgb.depth = 8;
    rgb.ignoreAlpha = AVIF_TRUE;
    rgb.pixels = (uint8_t *)rgba;
    rgb.rowBytes = (uint32_t)width * 4;
    size_t size = avifImageRGBToYUV(image, &rgb) == AVIF_RESULT_OK ? encode_avif(image, quantizer, speed, NULL) : 0;
    avifImageDestroy(image);
    return size;
#else
    (void)rgba; (void)width; (void)height; (void)quantizer; (void)speed;
    return 0;
#endif
}

// MARK: - JPEG XL

int ik_raw_jxl_decode(const void *data, size_t size, ik_raw_image *out) {
#ifdef IK_HAS_JXL
    memset(out, 0, sizeof(*out));
    JxlDecoder *decoder = JxlDecoderCreate(NULL);
    int status = -1;
    JxlBasicInfo info;
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    JxlDecoderSubscribeEvents(decoder, JXL_DEC_BASIC_INFO | JXL_DEC_FULL_IMAGE);
    JxlDecoderSetInput(decoder, (const uint8_t *)data, size);
    JxlDecoderCloseInput(decoder);
    for (;;) {
        JxlDecoderStatus event = JxlDecoderProcessInput(decoder);
        if (event == JXL_DEC_BASIC_INFO) {
            JxlDecoderGetBasicInfo(decoder, &info);
        } else if (event == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            if (out->frames || alloc_frame(out, (int)info.xsize, (int)info.ysize) != 0) break;
            JxlDecoderSetImageOutBuffer(decoder, &format, out->frames[0], (size_t)info.xsize * info.ysize * 4);
        } else if (event == JXL_DEC_FULL_IMAGE) {
            status = 0;
            break;
        } else {
            break;
        }
    }
    if (status != 0) ik_raw_image_free(out);
    JxlDecoderDestroy(decoder);
    return status;
#else
    (void)data; (void)size; (void)out;
    return -1;
#endif
}

size_t ik_raw_jxl_encode(const void *rgba, int width, int height, float distance, void **output) {
#ifdef IK_HAS_JXL
    *output = NULL;
    JxlEncoder *encoder = JxlEncoderCreate(NULL);
    JxlBasicInfo info;
    JxlEncoderInitBasicInfo(&info);
    info.xsize = (uint32_t)width;
    info.ysize = (uint32_t)height;
    info.bits_per_sample = 8;
    info.num_color_channels = 3;
    info.num_extra_channels = 0;
    info.uses_original_profile = JXL_FALSE;
    size_t size = 0;
    uint8_t *buffer = NULL;
    if (JxlEncoderSetBasicInfo(encoder, &info) == JXL_ENC_SUCCESS) {
        JxlColorEncoding color;
        JxlColorEncodingSetToSRGB(&color, JXL_FALSE);
        JxlEncoderSetColorEncoding(encoder, &color);
        JxlEncoderFrameSettings *settings = JxlEncoderFrameSettingsCreate(encoder, NULL);
        JxlEncoderSetFrameDistance(settings, distance);
        JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, 3);
        JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
        // RGBA input with no alpha channel declared: pass RGB.
        size_t count = (size_t)width * height;
        uint8_t *rgb = (uint8_t *)malloc(count * 3);
        for (size_t i = 0; i < count; i++) memcpy(rgb + i * 3, (const uint8_t *)rgba + i * 4, 3);
        format.num_channels = 3;
        if (JxlEncoderAddImageFrame(settings, &format, rgb, count * 3) == JXL_ENC_SUCCESS) {
            JxlEncoderCloseInput(encoder);
            size_t capacity = 1 << 20;
            buffer = (uint8_t *)malloc(capacity);
            uint8_t *next = buffer;
            size_t available = capacity;
            JxlEncoderStatus status;
            while ((status = JxlEncoderProcessOutput(encoder, &next, &available)) == JXL_ENC_NEED_MORE_OUTPUT) {
                size_t used = (size_t)(next - buffer);
                capacity *= 2;
                buffer = (uint8_t *)realloc(buffer, capacity);
                next = buffer + used;
                available = capacity - used;
            }
            if (status == JXL_ENC_SUCCESS) size = (size_t)(next - buffer);
        }
        free(rgb);
    }
    JxlEncoderDestroy(encoder);
    if (size == 0) { free(buffer); buffer = NULL; }
    *output = buffer;
    return size;
#else
    (void)rgba; (void)width; (void)height; (void)distance; *output = NULL;
    return 0;
#endif
}

// MARK: - TIFF

typedef struct { const uint8_t *bytes; uint8_t *owned; size_t size, capacity, position; } memory_file;

static tmsize_t mem_read(thandle_t h, void *buffer, tmsize_t size) {
    memory_file *f = (memory_file *)h;
    size_t count = f->position >= f->size ? 0 : (size_t)size < f->size - f->position ? (size_t)size : f->size - f->position;
    memcpy(buffer, (f->owned ? f->owned : f->bytes) + f->position, count);
    f->position += count;
    return (tmsize_t)count;
}
static tmsize_t mem_write(thandle_t h, void *buffer, tmsize_t size) {
    memory_file *f = (memory_file *)h;
    if (f->position + (size_t)size > f->capacity) {
        size_t capacity = (f->position + (size_t)size) * 2;
        f->owned = (uint8_t *)realloc(f->owned, capacity);
        memset(f->owned + f->capacity, 0, capacity - f->capacity);
        f->capacity = capacity;
    }
    memcpy(f->owned + f->position, buffer, (size_t)size);
    f->position += (size_t)size;
    if (f->position > f->size) f->size = f->position;
    return size;
}
static toff_t mem_seek(thandle_t h, toff_t offset, int whence) {
    memory_file *f = (memory_file *)h;
    size_t base = whence == SEEK_CUR ? f->position : whence == SEEK_END ? f->size : 0;
    f->position = base + (size_t)offset;
    return (toff_t)f->position;
}
static int mem_close(thandle_t h) { (void)h; return 0; }
static toff_t mem_size(thandle_t h) { return (toff_t)((memory_file *)h)->size; }
static int mem_map(thandle_t h, void **base, toff_t *size) { (void)h; (void)base; (void)size; return 0; }
static void mem_unmap(thandle_t h, void *base, toff_t size) { (void)h; (void)base; (void)size; }

int ik_raw_tiff_decode(const void *data, size_t size, ik_raw_image *out) {
    memset(out, 0, sizeof(*out));
    memory_file file = {(const uint8_t *)data, NULL, size, size, 0};
    TIFF *tiff = TIFFClientOpen("memory", "rm", &file, mem_read, mem_write, mem_seek, mem_close, mem_size, mem_map, mem_unmap);
    if (!tiff) return -1;
    uint32_t width = 0, height = 0;
    TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &width);
    TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &height);
    int status = -1;
    if (width && height && alloc_frame(out, (int)width, (int)height) == 0) {
        if (TIFFReadRGBAImageOriented(tiff, width, height, (uint32_t *)out->frames[0], ORIENTATION_TOPLEFT, 0)) status = 0;
        else ik_raw_image_free(out);
    }
    TIFFClose(tiff);
    return status;
}

size_t ik_raw_tiff_encode(const void *rgba, int width, int height, void **output) {
    memory_file file = {NULL, NULL, 0, 0, 0};
    TIFF *tiff = TIFFClientOpen("memory", "w", &file, mem_read, mem_write, mem_seek, mem_close, mem_size, mem_map, mem_unmap);
    *output = NULL;
    if (!tiff) return 0;
    TIFFSetField(tiff, TIFFTAG_IMAGEWIDTH, (uint32_t)width);
    TIFFSetField(tiff, TIFFTAG_IMAGELENGTH, (uint32_t)height);
    TIFFSetField(tiff, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tiff, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(tiff, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(tiff, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tiff, TIFFTAG_COMPRESSION, COMPRESSION_LZW);
    TIFFSetField(tiff, TIFFTAG_PREDICTOR, 2);
    TIFFSetField(tiff, TIFFTAG_ROWSPERSTRIP, 16);
    uint8_t *row = (uint8_t *)malloc((size_t)width * 3);
    int ok = 1;
    for (int y = 0; y < height && ok; y++) {
        const uint8_t *source = (const uint8_t *)rgba + (size_t)y * width * 4;
        for (int x = 0; x < width; x++) memcpy(row + x * 3, source + x * 4, 3);
        ok = TIFFWriteScanline(tiff, row, (uint32_t)y, 0) == 1;
    }
    free(row);
    TIFFClose(tiff);
    if (!ok) { free(file.owned); return 0; }
    *output = file.owned;
    return file.size;
}

// MARK: - Colour

void *ik_raw_make_profile(int which, size_t *size) {
    // 0: Display P3 (sRGB curve), 1: Adobe RGB (1998) (gamma 563/256).
    cmsCIExyY d65 = {0.3127, 0.3290, 1.0};
    cmsCIExyYTRIPLE p3 = {{0.680, 0.320, 1.0}, {0.265, 0.690, 1.0}, {0.150, 0.060, 1.0}};
    cmsCIExyYTRIPLE adobe = {{0.640, 0.330, 1.0}, {0.210, 0.710, 1.0}, {0.150, 0.060, 1.0}};
    double srgb_parameters[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
    cmsToneCurve *curve = which == 0 ? cmsBuildParametricToneCurve(NULL, 4, srgb_parameters) : cmsBuildGamma(NULL, 563.0 / 256.0);
    cmsToneCurve *curves[3] = {curve, curve, curve};
    cmsHPROFILE profile = cmsCreateRGBProfile(&d65, which == 0 ? &p3 : &adobe, curves);
    cmsMLU *description = cmsMLUalloc(NULL, 1);
    cmsMLUsetASCII(description, "en", "US", which == 0 ? "Display P3 (bench)" : "Adobe RGB (bench)");
    cmsWriteTag(profile, cmsSigProfileDescriptionTag, description);
    cmsMLUfree(description);
    cmsUInt32Number bytes = 0;
    cmsSaveProfileToMem(profile, NULL, &bytes);
    void *memory = malloc(bytes);
    cmsSaveProfileToMem(profile, memory, &bytes);
    cmsCloseProfile(profile);
    cmsFreeToneCurve(curve);
    *size = bytes;
    return memory;
}

void *ik_raw_lcms_transform(const void *icc, size_t size) {
    cmsHPROFILE source = cmsOpenProfileFromMem(icc, (cmsUInt32Number)size);
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    cmsHTRANSFORM transform = cmsCreateTransform(source, TYPE_RGBA_8, srgb, TYPE_RGBA_8, INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_COPY_ALPHA);
    cmsCloseProfile(source);
    cmsCloseProfile(srgb);
    return transform;
}

void ik_raw_lcms_apply(void *transform, const void *input, void *output, int width, int height) {
    cmsDoTransform((cmsHTRANSFORM)transform, input, output, (cmsUInt32Number)width * (cmsUInt32Number)height);
}

void ik_raw_lcms_free(void *transform) { cmsDeleteTransform((cmsHTRANSFORM)transform); }

// MARK: - SVG

#ifdef IK_BENCH_SVG
#include <librsvg/rsvg.h>
#endif

int ik_raw_svg_render(const void *data, size_t size, int width, int height) {
#ifdef IK_BENCH_SVG
    GError *error = NULL;
    RsvgHandle *handle = rsvg_handle_new_from_data((const guint8 *)data, size, &error);
    if (!handle) { g_error_free(error); return -1; }
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
    cairo_t *cr = cairo_create(surface);
    RsvgRectangle viewport = {0, 0, width, height};
    int status = rsvg_handle_render_document(handle, cr, &viewport, &error) ? 0 : -1;
    if (error) g_error_free(error);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    g_object_unref(handle);
    return status;
#else
    (void)data; (void)size; (void)width; (void)height;
    return -1;
#endif
}
