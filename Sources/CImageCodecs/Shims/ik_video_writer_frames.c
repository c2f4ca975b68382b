// Frames into an open video writer: each composited onto white, converted by libswscale, sent to
// the encoder with its duration, the packets it has ready muxed; then the end flushed.
#include "ik_video_writer.h"

#include <stdio.h>

#ifdef IK_VIDEO
#include "ik_av_messages.h"
#include "ik_video_writer_internal.h"
#include <stdlib.h>
#include <string.h>

static int64_t duration_of(const ik_video_writer *writer, int64_t pts) {
    for (size_t index = writer->time_count; index-- > 0;) {
        if (writer->times[index].start == pts) return writer->times[index].duration;
    }
    return 0;
}

/// Sends `frame` (NULL: the end) and writes every packet the encoder has ready.
static ik_video_status drain(ik_video_writer *writer, AVFrame *frame, char *message, size_t message_size) {
    int error = avcodec_send_frame(writer->encoder, frame);
    if (error < 0) return ik_av_say_error(message, message_size, "the encoder refused a frame", error), IK_VIDEO_INTERNAL;
    for (;;) {
        error = avcodec_receive_packet(writer->encoder, writer->packet);
        if (error == AVERROR(EAGAIN) || error == AVERROR_EOF) return IK_VIDEO_OK;
        if (error < 0) return ik_av_say_error(message, message_size, "the encoder failed", error), IK_VIDEO_INTERNAL;
        int64_t duration = duration_of(writer, writer->packet->pts);
        if (duration > 0) writer->packet->duration = duration;
        av_packet_rescale_ts(writer->packet, writer->encoder->time_base, writer->stream->time_base);
        writer->packet->stream_index = writer->stream->index;
        error = av_interleaved_write_frame(writer->format, writer->packet);
        if (error < 0) return ik_av_say_error(message, message_size, "the muxer failed", error), IK_VIDEO_INTERNAL;
    }
}

/// Closes the last frame's time: it shows until `end`.
static int close_last_time(ik_video_writer *writer, int64_t end) {
    if (writer->time_count == 0) return 0;
    frame_time *last = &writer->times[writer->time_count - 1];
    last->duration = end > last->start ? end - last->start : 1;
    return 0;
}

ik_video_status ik_video_writer_add(ik_video_writer *writer, const uint8_t *rgba, size_t stride, int64_t start_ms,
                                    char *message, size_t message_size) {
    if (start_ms <= writer->last_start || start_ms < 0) {
        return ik_av_say(message, message_size, "frame times must increase"), IK_VIDEO_INTERNAL;
    }
    if (writer->time_count == writer->time_capacity) {
        size_t capacity = writer->time_capacity ? writer->time_capacity * 2 : 64;
        frame_time *times = realloc(writer->times, capacity * sizeof *times);
        if (!times) return ik_av_say(message, message_size, "out of memory"), IK_VIDEO_INTERNAL;
        writer->times = times;
        writer->time_capacity = capacity;
    }
    close_last_time(writer, start_ms);
    writer->times[writer->time_count++] = (frame_time){start_ms, 0};
    writer->last_start = start_ms;

    int error = av_frame_make_writable(writer->frame);
    if (error < 0) return ik_av_say_error(message, message_size, "a frame buffer", error), IK_VIDEO_INTERNAL;
    // 4:2:0 has no alpha: pixels that are not opaque are composited onto white on the way.
    int32_t width = writer->source_width, height = writer->source_height;
    for (int32_t y = 0; y < height; y++) {
        const uint8_t *in = rgba + (size_t)y * stride;
        uint8_t *out = writer->scratch + (size_t)y * writer->scratch_stride;
        memcpy(out, in, (size_t)width * 4);
        for (int32_t x = 0; x < width * 4; x += 4) {
            unsigned alpha = out[x + 3];
            if (alpha == 255) continue;
            for (int c = 0; c < 3; c++) out[x + c] = (uint8_t)((out[x + c] * alpha + 255 * (255 - alpha) + 127) / 255);
            out[x + 3] = 255;
        }
    }
    const uint8_t *planes[1] = {writer->scratch};
    const int strides[1] = {(int)writer->scratch_stride};
    sws_scale(writer->scaler, planes, strides, 0, height, writer->frame->data, writer->frame->linesize);
    writer->frame->pts = start_ms;
    return drain(writer, writer->frame, message, message_size);
}

ik_video_status ik_video_writer_finish(ik_video_writer *writer, int64_t end_ms, uint8_t **bytes, size_t *size,
                                       char *message, size_t message_size) {
    *bytes = NULL;
    *size = 0;
    if (writer->time_count == 0) return ik_av_say(message, message_size, "a video needs a frame"), IK_VIDEO_INTERNAL;
    close_last_time(writer, end_ms);
    ik_video_status status = drain(writer, NULL, message, message_size);
    if (status != IK_VIDEO_OK) return status;
    int error = av_write_trailer(writer->format);
    writer->header_written = 0;
    if (error < 0) return ik_av_say_error(message, message_size, "the container's index", error), IK_VIDEO_INTERNAL;
    avio_flush(writer->format->pb);
    *bytes = writer->file.data;
    *size = writer->file.size;
    writer->file.data = NULL;
    writer->file.size = writer->file.capacity = 0;
    return IK_VIDEO_OK;
}

#else

ik_video_status ik_video_writer_add(ik_video_writer *writer, const uint8_t *rgba, size_t stride, int64_t start_ms,
                                    char *message, size_t message_size) {
    (void)writer, (void)rgba, (void)stride, (void)start_ms, (void)message, (void)message_size;
    return IK_VIDEO_UNAVAILABLE;
}

ik_video_status ik_video_writer_finish(ik_video_writer *writer, int64_t end_ms, uint8_t **bytes, size_t *size,
                                       char *message, size_t message_size) {
    (void)writer, (void)end_ms, (void)message, (void)message_size;
    *bytes = NULL;
    *size = 0;
    return IK_VIDEO_UNAVAILABLE;
}

#endif
