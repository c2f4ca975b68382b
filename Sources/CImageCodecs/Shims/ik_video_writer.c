// Animations into real video: each RGBA frame is composited onto white, converted to 4:2:0 by
// libswscale, encoded by libx264 or libvpx-vp9 at a constant rate factor and muxed into memory.
// The MP4 muxer's faststart pass reads back what it wrote: it is given a reader over the same
// memory, so the index lands before the media without a file.
#include "ik_video_writer.h"

#include <stdio.h>

#ifdef IK_VIDEO
#include <libavcodec/avcodec.h>
#include "ik_av_messages.h"
#include "ik_video_writer_internal.h"
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { IO_BUFFER_SIZE = 64 * 1024, MAX_OUTPUT_BYTES = 1 << 30 };


static int write_bytes(void *opaque, uint8_t *buffer, int count) {
    memory_cursor *cursor = opaque;
    memory_file *file = cursor->file;
    size_t end = cursor->position + (size_t)count;
    if (end > MAX_OUTPUT_BYTES) return AVERROR(EFBIG);
    if (end > file->capacity) {
        size_t capacity = file->capacity ? file->capacity : 256 * 1024;
        while (capacity < end) capacity *= 2;
        uint8_t *data = realloc(file->data, capacity);
        if (!data) return AVERROR(ENOMEM);
        file->data = data;
        file->capacity = capacity;
    }
    if (cursor->position > file->size) memset(file->data + file->size, 0, cursor->position - file->size);
    memcpy(file->data + cursor->position, buffer, (size_t)count);
    cursor->position = end;
    if (end > file->size) file->size = end;
    return count;
}

static int read_bytes(void *opaque, uint8_t *buffer, int wanted) {
    memory_cursor *cursor = opaque;
    memory_file *file = cursor->file;
    if (cursor->position >= file->size) return AVERROR_EOF;
    size_t left = file->size - cursor->position;
    size_t count = (size_t)wanted < left ? (size_t)wanted : left;
    memcpy(buffer, file->data + cursor->position, count);
    cursor->position += count;
    return (int)count;
}

static int64_t seek_bytes(void *opaque, int64_t offset, int whence) {
    memory_cursor *cursor = opaque;
    if (whence & AVSEEK_SIZE) return (int64_t)cursor->file->size;
    int64_t base;
    switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = (int64_t)cursor->position; break;
    case SEEK_END: base = (int64_t)cursor->file->size; break;
    default: return AVERROR(EINVAL);
    }
    int64_t target = base + offset;
    if (target < 0 || target > MAX_OUTPUT_BYTES) return AVERROR(EINVAL);
    cursor->position = (size_t)target;
    return target;
}

/// The muxer's second pass (MP4 faststart) opens its own output again to read it: a reader over
/// the same memory. Any other resource is refused.
static int open_reader(struct AVFormatContext *format, AVIOContext **io, const char *url, int flags,
                       AVDictionary **options) {
    (void)url, (void)options;
    ik_video_writer *writer = format->opaque;
    if (!writer || flags != AVIO_FLAG_READ) return AVERROR(EPERM);
    memory_cursor *cursor = av_mallocz(sizeof *cursor);
    uint8_t *buffer = av_malloc(IO_BUFFER_SIZE);
    AVIOContext *reader = cursor && buffer
        ? avio_alloc_context(buffer, IO_BUFFER_SIZE, 0, cursor, read_bytes, NULL, seek_bytes)
        : NULL;
    if (!reader) {
        av_free(cursor);
        av_free(buffer);
        return AVERROR(ENOMEM);
    }
    cursor->file = &writer->file;
    reader->seekable = AVIO_SEEKABLE_NORMAL;
    *io = reader;
    return 0;
}

static int close_reader(struct AVFormatContext *format, AVIOContext *io) {
    (void)format;
    if (!io) return 0;
    av_free(io->opaque);
    av_freep(&io->buffer);
    avio_context_free(&io);
    return 0;
}

/// quality 1-100 to a constant rate factor: x264's 0-51 (80 → 23) or VP9's 0-63 (80 → 31).
static int rate_factor(ik_video_container container, int32_t quality) {
    if (quality < 1) quality = 1;
    if (quality > 100) quality = 100;
    if (container == IK_VIDEO_MP4_H264) return (int)(51.5 - quality * 0.35);
    return (int)(63.5 - quality * 0.4);
}

static int even(int32_t side) { return side < 2 ? 2 : side & ~1; }

ik_video_status ik_video_writer_open(ik_video_container container, int32_t width, int32_t height, int32_t quality,
                                     ik_video_writer **out, char *message, size_t message_size) {
    *out = NULL;
    ik_av_quiet();
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384) {
        return ik_av_say(message, message_size, "a video's sides must be 1 to 16384 pixels"), IK_VIDEO_TOO_LARGE;
    }
    const char *encoder_name = container == IK_VIDEO_MP4_H264 ? "libx264" : "libvpx-vp9";
    const char *muxer_name = container == IK_VIDEO_MP4_H264 ? "mp4" : "webm";
    const AVCodec *codec = avcodec_find_encoder_by_name(encoder_name);
    if (!codec) {
        snprintf(message, message_size, "this build's libavcodec has no %s encoder", encoder_name);
        return IK_VIDEO_UNSUPPORTED_CODEC;
    }
    ik_video_writer *writer = calloc(1, sizeof *writer);
    if (!writer) return ik_av_say(message, message_size, "out of memory"), IK_VIDEO_INTERNAL;
    writer->container = container;
    writer->source_width = width;
    writer->source_height = height;
    writer->cursor.file = &writer->file;
    writer->last_start = -1;
    ik_video_status status = IK_VIDEO_INTERNAL;
    int error = avformat_alloc_output_context2(&writer->format, NULL, muxer_name, NULL);
    if (error < 0 || !writer->format) {
        ik_av_say_error(message, message_size, "no muxer", error);
        goto fail;
    }
    uint8_t *buffer = av_malloc(IO_BUFFER_SIZE);
    AVIOContext *io =
        buffer ? avio_alloc_context(buffer, IO_BUFFER_SIZE, 1, &writer->cursor, NULL, write_bytes, seek_bytes) : NULL;
    if (!io) {
        av_free(buffer);
        ik_av_say(message, message_size, "out of memory");
        goto fail;
    }
    io->seekable = AVIO_SEEKABLE_NORMAL;
    writer->format->pb = io;
    writer->format->flags |= AVFMT_FLAG_CUSTOM_IO;
    writer->format->opaque = writer;
    writer->format->io_open = open_reader;
    writer->format->io_close2 = close_reader;

    writer->encoder = avcodec_alloc_context3(codec);
    writer->stream = avformat_new_stream(writer->format, NULL);
    writer->frame = av_frame_alloc();
    writer->packet = av_packet_alloc();
    writer->scratch_stride = (((size_t)width * 4 + 63) & ~(size_t)63) + 64;
    writer->scratch = av_malloc(writer->scratch_stride * ((size_t)height + 1));
    if (!writer->encoder || !writer->stream || !writer->frame || !writer->packet || !writer->scratch) {
        ik_av_say(message, message_size, "out of memory");
        goto fail;
    }
    AVCodecContext *encoder = writer->encoder;
    encoder->width = even(width);
    encoder->height = even(height);
    encoder->pix_fmt = AV_PIX_FMT_YUV420P;
    encoder->time_base = (AVRational){1, 1000};
    encoder->sample_aspect_ratio = (AVRational){1, 1};
    encoder->color_range = AVCOL_RANGE_MPEG;
    encoder->colorspace = AVCOL_SPC_BT709;
    encoder->color_primaries = AVCOL_PRI_BT709;
    encoder->color_trc = AVCOL_TRC_IEC61966_2_1;
    // One thread: the service runs one request per core already.
    encoder->thread_count = 1;
    // A key frame at least every 10 s (timestamps are in ms): seeking in a long animation stays cheap.
    encoder->gop_size = 250;
    if (writer->format->oformat->flags & AVFMT_GLOBALHEADER) encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary *options = NULL;
    char crf[16];
    snprintf(crf, sizeof crf, "%d", rate_factor(container, quality));
    av_dict_set(&options, "crf", crf, 0);
    if (container == IK_VIDEO_MP4_H264) {
        av_dict_set(&options, "preset", "fast", 0);
        av_dict_set(&options, "profile", "high", 0);
    } else {
        encoder->bit_rate = 0;  // constant quality
        av_dict_set(&options, "deadline", "good", 0);
        av_dict_set(&options, "cpu-used", "4", 0);
        av_dict_set(&options, "row-mt", "1", 0);
    }
    error = avcodec_open2(encoder, codec, &options);
    av_dict_free(&options);
    if (error < 0) {
        ik_av_say_error(message, message_size, "the encoder refused its settings", error);
        goto fail;
    }
    error = avcodec_parameters_from_context(writer->stream->codecpar, encoder);
    if (error < 0) {
        ik_av_say_error(message, message_size, "the stream's parameters", error);
        goto fail;
    }
    writer->stream->time_base = encoder->time_base;
    writer->frame->format = encoder->pix_fmt;
    writer->frame->width = encoder->width;
    writer->frame->height = encoder->height;
    writer->frame->color_range = encoder->color_range;
    writer->frame->colorspace = encoder->colorspace;
    error = av_frame_get_buffer(writer->frame, 0);
    if (error < 0) {
        ik_av_say_error(message, message_size, "a frame buffer", error);
        goto fail;
    }
    writer->scaler = sws_getContext(width, height, AV_PIX_FMT_RGBA, encoder->width, encoder->height,
                                    AV_PIX_FMT_YUV420P, SWS_BICUBIC, NULL, NULL, NULL);
    if (!writer->scaler) {
        ik_av_say(message, message_size, "no RGBA to 4:2:0 conversion");
        goto fail;
    }
    // The BT.709 matrix in limited range, as the stream's parameters say.
    const int *coefficients = sws_getCoefficients(SWS_CS_ITU709);
    sws_setColorspaceDetails(writer->scaler, coefficients, 1, coefficients, 0, 0, 1 << 16, 1 << 16);
    AVDictionary *muxing = NULL;
    if (container == IK_VIDEO_MP4_H264) av_dict_set(&muxing, "movflags", "+faststart", 0);
    error = avformat_write_header(writer->format, &muxing);
    av_dict_free(&muxing);
    if (error < 0) {
        ik_av_say_error(message, message_size, "the container's header", error);
        goto fail;
    }
    writer->header_written = 1;
    *out = writer;
    return IK_VIDEO_OK;

fail:
    ik_video_writer_close(writer);
    return status;
}

void ik_video_writer_close(ik_video_writer *writer) {
    if (!writer) return;
    if (writer->format) {
        if (writer->format->pb) {
            av_freep(&writer->format->pb->buffer);
            avio_context_free(&writer->format->pb);
        }
        avformat_free_context(writer->format);
    }
    avcodec_free_context(&writer->encoder);
    av_frame_free(&writer->frame);
    av_packet_free(&writer->packet);
    sws_freeContext(writer->scaler);
    av_free(writer->scratch);
    free(writer->times);
    free(writer->file.data);
    free(writer);
}

void ik_video_bytes_free(uint8_t *bytes) { free(bytes); }

#else

ik_video_status ik_video_writer_open(ik_video_container container, int32_t width, int32_t height, int32_t quality,
                                     ik_video_writer **writer, char *message, size_t message_size) {
    (void)container, (void)width, (void)height, (void)quality;
    *writer = NULL;
    if (message && message_size) snprintf(message, message_size, "this build writes no video (the Video trait)");
    return IK_VIDEO_UNAVAILABLE;
}

void ik_video_writer_close(ik_video_writer *writer) { (void)writer; }

void ik_video_bytes_free(uint8_t *bytes) { (void)bytes; }

#endif
