// HEVC through FFmpeg's libavcodec for libheif: a decoder plugin (libheif's plugin API, version 1)
// that libheif picks over libde265 for every HEVC item and tile. libheif hands the plugin the
// hvcC parameter sets and the item's data as NAL units, each behind a 4-byte big-endian length;
// they are rewritten with Annex B start codes, decoded as one packet by one single-threaded
// decoder, and the planes are copied into a YCbCr (or monochrome) heif_image, which libheif
// then crops, converts and assembles as it does libde265's output. HEVC decoding is exact, so
// the pixels are libde265's.
#include "ik_heif_avcodec.h"

#ifdef IK_HEVC_AVCODEC
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
#include <libheif/heif.h>
#include <libheif/heif_plugin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *annexB;
    size_t length, capacity;
} ik_avcodec_decoder;

static struct heif_error failure(const char *message) {
    struct heif_error error = {heif_error_Decoder_plugin_error, heif_suberror_Unspecified, message};
    return error;
}

static const struct heif_error success = {heif_error_Ok, heif_suberror_Unspecified, "Success"};

static const char *plugin_name(void) { return "ImageKit HEVC decoder (libavcodec)"; }

static int supports(enum heif_compression_format format) { return format == heif_compression_HEVC ? 200 : 0; }

static struct heif_error new_decoder(void **decoder) {
    ik_avcodec_decoder *state = calloc(1, sizeof(ik_avcodec_decoder));
    if (!state) return failure("out of memory");
    *decoder = state;
    return success;
}

static void free_decoder(void *decoder) {
    ik_avcodec_decoder *state = decoder;
    if (!state) return;
    free(state->annexB);
    free(state);
}

/// Appends the length-prefixed NAL units of `data` with start codes instead of lengths.
static struct heif_error push_data(void *decoder, const void *data, size_t size) {
    ik_avcodec_decoder *state = decoder;
    const uint8_t *bytes = data;
    // Each 4-byte length becomes a 4-byte start code: the size stays, plus the decoder's padding.
    size_t needed = state->length + size + AV_INPUT_BUFFER_PADDING_SIZE;
    if (needed < size) return failure("HEVC data too large");
    if (needed > state->capacity) {
        size_t capacity = needed > 2 * state->capacity ? needed : 2 * state->capacity;
        uint8_t *grown = realloc(state->annexB, capacity);
        if (!grown) return failure("out of memory");
        state->annexB = grown;
        state->capacity = capacity;
    }
    size_t at = 0;
    while (at < size) {
        if (size - at < 4) return failure("HEVC data: a NAL length is cut short");
        const size_t nal = (size_t)bytes[at] << 24 | (size_t)bytes[at + 1] << 16 | (size_t)bytes[at + 2] << 8 |
                           (size_t)bytes[at + 3];
        at += 4;
        if (nal > size - at) return failure("HEVC data: a NAL unit is longer than the data");
        uint8_t *out = state->annexB + state->length;
        out[0] = 0, out[1] = 0, out[2] = 0, out[3] = 1;
        memcpy(out + 4, bytes + at, nal);
        state->length += 4 + nal;
        at += nal;
    }
    memset(state->annexB + state->length, 0, AV_INPUT_BUFFER_PADDING_SIZE);
    return success;
}

/// The decoded frame's planes as a heif_image: 8-bit planes as bytes, deeper ones as 16-bit words.
static struct heif_error to_heif_image(const AVFrame *frame, struct heif_image **out) {
    const AVPixFmtDescriptor *format = av_pix_fmt_desc_get(frame->format);
    // Planar YCbCr, or one grey plane (an alpha or depth image, a monochrome photo: FFmpeg does
    // not call a single plane "planar"), in native byte order.
    if (!format || (format->flags & (AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_ALPHA | AV_PIX_FMT_FLAG_PAL)) ||
        !(format->nb_components == 1 || (format->nb_components == 3 && (format->flags & AV_PIX_FMT_FLAG_PLANAR))))
        return failure("HEVC: a pixel format this plugin does not copy");
    const int depth = format->comp[0].depth;
    if (depth < 1 || depth > 16) return failure("HEVC: an unsupported bit depth");
    const int monochrome = format->nb_components == 1;
    enum heif_chroma chroma;
    if (monochrome) chroma = heif_chroma_monochrome;
    else if (format->log2_chroma_w == 1 && format->log2_chroma_h == 1) chroma = heif_chroma_420;
    else if (format->log2_chroma_w == 1 && format->log2_chroma_h == 0) chroma = heif_chroma_422;
    else if (format->log2_chroma_w == 0 && format->log2_chroma_h == 0) chroma = heif_chroma_444;
    else return failure("HEVC: an unsupported chroma layout");
    struct heif_image *image = NULL;
    struct heif_error error = heif_image_create(
        frame->width, frame->height, monochrome ? heif_colorspace_monochrome : heif_colorspace_YCbCr, chroma, &image);
    if (error.code != heif_error_Ok) return error;
    static const enum heif_channel channels[3] = {heif_channel_Y, heif_channel_Cb, heif_channel_Cr};
    const int bytesPerSample = depth > 8 ? 2 : 1;
    for (int plane = 0; plane < (monochrome ? 1 : 3); plane++) {
        const int width = plane == 0 ? frame->width : AV_CEIL_RSHIFT(frame->width, format->log2_chroma_w);
        const int height = plane == 0 ? frame->height : AV_CEIL_RSHIFT(frame->height, format->log2_chroma_h);
        error = heif_image_add_plane(image, channels[plane], width, height, depth);
        if (error.code != heif_error_Ok) {
            heif_image_release(image);
            return error;
        }
        int stride = 0;
        uint8_t *target = heif_image_get_plane(image, channels[plane], &stride);
        if (!target || !frame->data[plane]) {
            heif_image_release(image);
            return failure("HEVC: a plane is missing");
        }
        for (int y = 0; y < height; y++)
            memcpy(target + (size_t)y * stride, frame->data[plane] + (size_t)y * frame->linesize[plane],
                   (size_t)width * bytesPerSample);
    }
    *out = image;
    return success;
}

static struct heif_error decode_image(void *decoder, struct heif_image **out) {
    ik_avcodec_decoder *state = decoder;
    *out = NULL;
    if (state->length == 0) return failure("HEVC: no data");
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_HEVC);
    if (!codec) return failure("libavcodec has no HEVC decoder");
    AVCodecContext *context = avcodec_alloc_context3(codec);
    AVPacket *packet = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    struct heif_error result = failure("HEVC: the data decodes to no picture");
    if (!context || !packet || !frame) {
        result = failure("out of memory");
        goto done;
    }
    // One thread: the service runs one decode per worker.
    context->thread_count = 1;
    if (avcodec_open2(context, codec, NULL) < 0) {
        result = failure("libavcodec: the HEVC decoder does not open");
        goto done;
    }
    packet->data = state->annexB;
    packet->size = state->length > INT32_MAX ? INT32_MAX : (int)state->length;
    if (avcodec_send_packet(context, packet) < 0 || avcodec_send_packet(context, NULL) < 0) {
        result = failure("libavcodec: the HEVC data is corrupt");
        goto done;
    }
    if (avcodec_receive_frame(context, frame) == 0) result = to_heif_image(frame, out);
done:
    av_frame_free(&frame);
    av_packet_free(&packet);
    avcodec_free_context(&context);
    return result;
}

static const struct heif_decoder_plugin plugin = {
    .plugin_api_version = 1,
    .get_plugin_name = plugin_name,
    .init_plugin = NULL,
    .deinit_plugin = NULL,
    .does_support_format = supports,
    .new_decoder = new_decoder,
    .free_decoder = free_decoder,
    .push_data = push_data,
    .decode_image = decode_image,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = 0;

static void register_plugin(void) {
    av_log_set_level(AV_LOG_QUIET);  // a corrupt file is the caller's typed error, not stderr noise
    registered = heif_register_decoder_plugin(&plugin).code == heif_error_Ok;
}

int ik_heif_avcodec_register(void) {
    pthread_once(&once, register_plugin);
    return registered;
}
#else
int ik_heif_avcodec_register(void) { return 0; }
#endif
