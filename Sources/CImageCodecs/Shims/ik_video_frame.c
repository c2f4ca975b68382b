// Frames of an open video: seek to the key frame at or before the time asked, decode on to the
// frame shown then, convert that one frame to RGBA (or RGB48) at the size asked.
#include "ik_video.h"

#include <stdio.h>

#ifdef IK_VIDEO
#include "ik_av_messages.h"
#include "ik_video_internal.h"
#include <libavutil/avstring.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_BAD_PACKETS = 16 };

/// Seeks to the key frame at or before `target` (stream time base), or to the start.
static int seek_to(ik_video *video, int64_t target) {
    int index = video->stream->index;
    if (avformat_seek_file(video->format, index, INT64_MIN, target, target, 0) >= 0) return 0;
    if (av_seek_frame(video->format, index, target, AVSEEK_FLAG_BACKWARD) >= 0) return 0;
    return av_seek_frame(video->format, index, INT64_MIN, AVSEEK_FLAG_BACKWARD | AVSEEK_FLAG_ANY);
}

ik_video_status ik_video_frame(ik_video *video, double seconds, int keyframe_only, int32_t max_frames,
                               int32_t out_width, int32_t out_height, void *pixels, size_t stride, int rgb48,
                               double *frame_seconds, char *message, size_t message_size) {
    video->decoded = 0;
    if (out_width <= 0 || out_height <= 0 || stride < (size_t)out_width * (rgb48 ? 6 : 4) || stride > INT32_MAX) {
        return ik_av_say(message, message_size, "invalid output size"), IK_VIDEO_INTERNAL;
    }
    AVRational base = video->stream->time_base;
    int64_t start = video->stream->start_time != AV_NOPTS_VALUE ? video->stream->start_time : 0;
    if (!(seconds >= 0)) seconds = 0;
    if (seconds > 1e7) seconds = 1e7;
    int64_t target = start + av_rescale_q(llround(seconds * AV_TIME_BASE), AV_TIME_BASE_Q, base);

    // Decoding on from where the last call stopped is never more work than seeking when the key
    // frame at or before the time is not past that point (a sprite's next tile, a preview's next
    // frame): then no frame is decoded twice.
    int decodes_on = 0;
    if (video->positioned && !keyframe_only && target >= video->last_time) {
        // The index holds decode times (MP4's); a key frame's presentation time is later by up
        // to the codec's reorder delay. Seeking pays only when a key frame not yet read surely
        // starts at or before the time.
        int index = av_index_search_timestamp(video->stream, target, AVSEEK_FLAG_BACKWARD);
        const AVIndexEntry *key = index >= 0 ? avformat_index_get_entry(video->stream, index) : NULL;
        AVRational rate = video->stream->avg_frame_rate;
        int64_t delay = rate.num > 0 && rate.den > 0
                            ? av_rescale_q(video->stream->codecpar->video_delay + 1, av_inv_q(rate), base)
                            : 0;
        decodes_on = key && (key->timestamp <= video->last_read || key->timestamp + delay > target);
    }
    video->positioned = 0;
    if (!decodes_on) {
        av_frame_unref(video->shown);
        av_frame_unref(video->pending);
        if (seek_to(video, target) < 0) {
            return ik_av_say(message, message_size, "the stream cannot be sought"), IK_VIDEO_INVALID;
        }
        avcodec_flush_buffers(video->decoder);
    }
    // Frames no other frame refers to (most B-frames) that start two frame durations or more
    // before the time cannot be the one shown then: they are not decoded at all. Without a known
    // frame rate every frame is decoded.
    AVRational rate = video->stream->avg_frame_rate;
    int64_t skip_before = INT64_MIN;
    if (!keyframe_only && rate.num > 0 && rate.den > 0) {
        skip_before = target - av_rescale_q(2, av_inv_q(rate), base);
    }
    // Decoding on, the last frame returned is still the one shown until a later one starts.
    int have = decodes_on, draining = 0, bad_packets = 0;
    int64_t shown_time = decodes_on ? video->last_time : 0;
    for (;;) {
        int error;
        if (video->pending->buf[0]) {  // decoded by the last call, not yet counted
            av_frame_move_ref(video->frame, video->pending);
            error = 0;
        } else {
            error = avcodec_receive_frame(video->decoder, video->frame);
            if (error == 0) video->decoded++;
        }
        if (error == 0) {
            int64_t time = video->frame->best_effort_timestamp;
            if (time == AV_NOPTS_VALUE) time = video->frame->pts;
            if (time == AV_NOPTS_VALUE) time = have ? shown_time : start;
            // The first frame stands for times before it; after that, a frame that starts past
            // the time is not shown at it.
            if (have && time > target) {
                av_frame_move_ref(video->pending, video->frame);
                break;
            }
            av_frame_unref(video->shown);
            av_frame_move_ref(video->shown, video->frame);
            have = 1;
            shown_time = time;
            if (keyframe_only || time == target) break;
            if (video->decoded >= max_frames) {
                snprintf(message, message_size, "reaching %.3f s takes more than %d decoded frames", seconds, max_frames);
                return IK_VIDEO_FRAME_LIMIT;
            }
            continue;
        }
        if (error == AVERROR_EOF) break;
        if (error != AVERROR(EAGAIN)) {
            if (have) break;
            return ik_av_say_error(message, message_size, "the video could not be decoded", error), IK_VIDEO_DECODE_FAILED;
        }
        if (draining) break;
        error = av_read_frame(video->format, video->packet);
        if (error < 0) {  // the end, or a cut or damaged file: flush what the decoder holds
            draining = 1;
            avcodec_send_packet(video->decoder, NULL);
            continue;
        }
        if (video->packet->stream_index != video->stream->index) {
            av_packet_unref(video->packet);
            continue;
        }
        video->last_read = video->packet->dts != AV_NOPTS_VALUE ? video->packet->dts : video->packet->pts;
        int64_t packet_time = video->packet->pts;
        video->decoder->skip_frame = packet_time != AV_NOPTS_VALUE && packet_time < skip_before
                                         && !(video->packet->flags & AV_PKT_FLAG_KEY)
                                     ? AVDISCARD_NONREF
                                     : AVDISCARD_DEFAULT;
        error = avcodec_send_packet(video->decoder, video->packet);
        av_packet_unref(video->packet);
        if (error < 0 && error != AVERROR(EAGAIN)) {
            if (error != AVERROR_INVALIDDATA || ++bad_packets > MAX_BAD_PACKETS) {
                if (have) break;
                return ik_av_say_error(message, message_size, "the video could not be decoded", error), IK_VIDEO_DECODE_FAILED;
            }
        }
    }
    if (!have || video->shown->width <= 0 || video->shown->height <= 0) {
        return ik_av_say(message, message_size, "no frame could be decoded"), IK_VIDEO_DECODE_FAILED;
    }

    const AVFrame *shown = video->shown;
    int shrinks = out_width < shown->width || out_height < shown->height;
    video->scaler = sws_getCachedContext(video->scaler, shown->width, shown->height, shown->format, out_width,
                                         out_height, rgb48 ? AV_PIX_FMT_RGB48 : AV_PIX_FMT_RGBA, shrinks ? SWS_AREA : SWS_BICUBIC, NULL, NULL,
                                         NULL);
    if (!video->scaler) return ik_av_say(message, message_size, "no conversion from the frame's pixel format"), IK_VIDEO_DECODE_FAILED;
    // The frame's own matrix and range (ffmpeg's scale filter does the same), to full-range RGB.
    int full_range = shown->color_range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(video->scaler, sws_getCoefficients(shown->colorspace), full_range,
                             sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
    size_t row_bytes = (size_t)out_width * (rgb48 ? 6 : 4);
    size_t padded = FFALIGN(row_bytes, 64) + 64;
    size_t needed = padded * (size_t)out_height + 64;
    if (needed > video->scratch_size) {
        av_freep(&video->scratch);
        video->scratch_size = 0;
        video->scratch = av_malloc(needed);
        if (!video->scratch) return ik_av_say(message, message_size, "out of memory"), IK_VIDEO_INTERNAL;
        video->scratch_size = needed;
    }
    uint8_t *planes[4] = {video->scratch, NULL, NULL, NULL};
    int strides[4] = {(int)padded, 0, 0, 0};
    if (sws_scale(video->scaler, (const uint8_t *const *)shown->data, shown->linesize, 0, shown->height, planes,
                  strides) != out_height) {
        return ik_av_say(message, message_size, "the frame could not be converted"), IK_VIDEO_DECODE_FAILED;
    }
    for (int32_t y = 0; y < out_height; y++) {
        memcpy((uint8_t *)pixels + (size_t)y * stride, video->scratch + (size_t)y * padded, row_bytes);
    }
    if (frame_seconds) *frame_seconds = (double)(shown_time - start) * av_q2d(base);
    video->positioned = !keyframe_only;
    video->last_time = shown_time;
    return IK_VIDEO_OK;
}

int32_t ik_video_frames_decoded(const ik_video *video) { return video ? video->decoded : 0; }

#else

ik_video_status ik_video_frame(ik_video *video, double seconds, int keyframe_only, int32_t max_frames,
                               int32_t out_width, int32_t out_height, void *pixels, size_t stride, int rgb48,
                               double *frame_seconds, char *message, size_t message_size) {
    (void)video, (void)seconds, (void)keyframe_only, (void)max_frames, (void)out_width, (void)out_height;
    (void)pixels, (void)stride, (void)rgb48, (void)frame_seconds, (void)message, (void)message_size;
    return IK_VIDEO_UNAVAILABLE;
}

int32_t ik_video_frames_decoded(const ik_video *video) { (void)video; return 0; }

#endif
