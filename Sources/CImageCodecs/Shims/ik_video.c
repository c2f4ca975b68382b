// Video frames for posters and sprite sheets: libavformat demuxes a container held in memory,
// libavcodec decodes only from the key frame at or before the time asked up to the frame shown
// then, and libswscale converts that one frame to RGBA at the size asked (the decode-time
// thumbnail of a video). Memory: the caller's bytes, one kept frame, the decoder's own buffers.
#include "ik_video.h"

#include <stdio.h>

#ifdef IK_VIDEO
#include <libavcodec/avcodec.h>
#include "ik_av_messages.h"
#include <libavformat/avformat.h>
#include <libavutil/avstring.h>
#include <libavutil/display.h>
#include <libswscale/swscale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IO_BUFFER_SIZE = 64 * 1024, MAX_BAD_PACKETS = 16 };

struct ik_video {
    const uint8_t *data;
    size_t size, position;
    AVIOContext *io;
    AVFormatContext *format;
    AVCodecContext *decoder;
    AVStream *stream;
    AVPacket *packet;
    AVFrame *frame, *shown;
    /// The frame decoded after the last one returned, kept for the next call.
    AVFrame *pending;
    struct SwsContext *scaler;
    /// Where swscale writes: it stores whole vectors, past a row's end when the row is not a
    /// multiple of their width — past the caller's last row. Rows are copied out from here.
    uint8_t *scratch;
    size_t scratch_size;
    int32_t decoded;
    /// The decoder sits just after the last frame returned (at `last_time`): a later time whose
    /// key frame is not past it is reached by decoding on, without a seek.
    int positioned;
    int64_t last_time;
    /// The decode timestamp of the last packet read (what the index's entries are in).
    int64_t last_read;
};

static int read_bytes(void *opaque, uint8_t *buffer, int wanted) {
    ik_video *video = opaque;
    size_t left = video->size - video->position;
    if (left == 0) return AVERROR_EOF;
    size_t count = (size_t)wanted < left ? (size_t)wanted : left;
    memcpy(buffer, video->data + video->position, count);
    video->position += count;
    return (int)count;
}

static int64_t seek_bytes(void *opaque, int64_t offset, int whence) {
    ik_video *video = opaque;
    if (whence & AVSEEK_SIZE) return (int64_t)video->size;
    int64_t base;
    switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = (int64_t)video->position; break;
    case SEEK_END: base = (int64_t)video->size; break;
    default: return AVERROR(EINVAL);
    }
    if (offset > (int64_t)video->size || offset < -(int64_t)video->size) return AVERROR(EINVAL);
    int64_t target = base + offset;
    if (target < 0 || target > (int64_t)video->size) return AVERROR(EINVAL);
    video->position = (size_t)target;
    return target;
}

/// A demuxer asks for another resource (an HLS segment, a concat entry, a MOV data reference):
/// refused. The bytes in memory are all a video may read — never a file or the network.
static int refuse_nested_open(struct AVFormatContext *format, AVIOContext **io, const char *url, int flags,
                              AVDictionary **options) {
    (void)format, (void)io, (void)url, (void)flags, (void)options;
    return AVERROR(EPERM);
}

/// The demuxers of the containers a video source may be: MP4/MOV, Matroska/WebM, AVI. Playlists,
/// scripts and raw streams are not videos here.
static const char *const DEMUXERS = "mov,matroska,webm,avi";

/// Clockwise quarter turns that show the frame upright: the display matrix holds the
/// counter-clockwise rotation the player applies.
static int32_t quarter_turns(const AVStream *stream) {
    const int32_t *matrix = NULL;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 30, 100)
    const AVPacketSideData *side = av_packet_side_data_get(stream->codecpar->coded_side_data,
                                                           stream->codecpar->nb_coded_side_data,
                                                           AV_PKT_DATA_DISPLAYMATRIX);
    if (side && side->size >= 9 * sizeof(int32_t)) matrix = (const int32_t *)side->data;
#else
    size_t size = 0;
    matrix = (const int32_t *)av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (size < 9 * sizeof(int32_t)) matrix = NULL;
#endif
    if (!matrix) return 0;
    double angle = av_display_rotation_get(matrix);
    if (isnan(angle)) return 0;
    long turns = lround(-angle / 90.0);
    return (int32_t)(((turns % 4) + 4) % 4);
}

/// Whether one of DEMUXERS recognises the first bytes (told apart: not a video, or a damaged one).
static int recognised(const uint8_t *data, size_t size) {
    size_t count = size < 4096 ? size : 4096;
    uint8_t *buffer = av_mallocz(count + AVPROBE_PADDING_SIZE);
    if (!buffer) return 0;
    memcpy(buffer, data, count);
    AVProbeData probe = {.filename = "", .buf = buffer, .buf_size = (int)count};
    const AVInputFormat *format = av_probe_input_format(&probe, 1);
    av_free(buffer);
    return format != NULL && av_match_list(format->name, DEMUXERS, ',') > 0;
}

static double seconds_of(AVRational rate) { return rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0; }

ik_video_status ik_video_open(const void *data, size_t size, int64_t max_pixels, ik_video **out,
                              ik_video_info *info, char *message, size_t message_size) {
    *out = NULL;
    memset(info, 0, sizeof *info);
    ik_av_quiet();
    ik_video *video = calloc(1, sizeof *video);
    if (!video) return ik_av_say(message, message_size, "out of memory"), IK_VIDEO_INTERNAL;
    video->data = data;
    video->size = size;
    ik_video_status status = IK_VIDEO_INTERNAL;
    uint8_t *buffer = av_malloc(IO_BUFFER_SIZE);
    if (buffer) video->io = avio_alloc_context(buffer, IO_BUFFER_SIZE, 0, video, read_bytes, NULL, seek_bytes);
    if (!video->io) {
        av_free(buffer);
        ik_av_say(message, message_size, "out of memory");
        goto fail;
    }
    video->format = avformat_alloc_context();
    if (!video->format) {
        ik_av_say(message, message_size, "out of memory");
        goto fail;
    }
    video->format->pb = video->io;
    video->format->flags |= AVFMT_FLAG_CUSTOM_IO;
    video->format->io_open = refuse_nested_open;
    video->format->format_whitelist = av_strdup(DEMUXERS);
    video->format->protocol_whitelist = av_strdup("none");
    if (!video->format->format_whitelist || !video->format->protocol_whitelist) {
        ik_av_say(message, message_size, "out of memory");
        goto fail;
    }
    int error = avformat_open_input(&video->format, NULL, NULL, NULL);
    if (error < 0) {  // avformat_open_input freed the context
        if (recognised(data, size)) {
            ik_av_say_error(message, message_size, "the video container could not be read", error);
            status = IK_VIDEO_INVALID;
        } else {
            ik_av_say(message, message_size, "not a video container libavformat reads");
            status = IK_VIDEO_UNRECOGNISED;
        }
        goto fail;
    }
    error = avformat_find_stream_info(video->format, NULL);
    if (error < 0) {
        ik_av_say_error(message, message_size, "the container's streams could not be read", error);
        status = IK_VIDEO_INVALID;
        goto fail;
    }
    int index = av_find_best_stream(video->format, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (index < 0 || (video->format->streams[index]->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
        ik_av_say(message, message_size, "the container has no video stream");
        status = IK_VIDEO_NO_VIDEO;
        goto fail;
    }
    video->stream = video->format->streams[index];
    const AVCodecParameters *parameters = video->stream->codecpar;
    if (parameters->width <= 0 || parameters->height <= 0) {
        ik_av_say(message, message_size, "the video stream has no frame size");
        status = IK_VIDEO_INVALID;
        goto fail;
    }
    if ((int64_t)parameters->width * parameters->height > max_pixels) {
        snprintf(message, message_size, "a %dx%d video is over the pixel limit", parameters->width, parameters->height);
        status = IK_VIDEO_TOO_LARGE;
        goto fail;
    }
    const AVCodec *codec = avcodec_find_decoder(parameters->codec_id);
    if (!codec) {
        snprintf(message, message_size, "no decoder for %s video in this build", avcodec_get_name(parameters->codec_id));
        status = IK_VIDEO_UNSUPPORTED_CODEC;
        goto fail;
    }
    video->decoder = avcodec_alloc_context3(codec);
    if (!video->decoder || avcodec_parameters_to_context(video->decoder, parameters) < 0) {
        ik_av_say(message, message_size, "out of memory");
        goto fail;
    }
    // One thread: the service runs one decode per core already, and frame threads would hold a
    // frame each.
    video->decoder->thread_count = 1;
    error = avcodec_open2(video->decoder, codec, NULL);
    if (error < 0) {
        ik_av_say_error(message, message_size, "the decoder refused the stream", error);
        status = IK_VIDEO_UNSUPPORTED_CODEC;
        goto fail;
    }
    video->packet = av_packet_alloc();
    video->frame = av_frame_alloc();
    video->shown = av_frame_alloc();
    video->pending = av_frame_alloc();
    if (!video->packet || !video->frame || !video->shown || !video->pending) {
        ik_av_say(message, message_size, "out of memory");
        goto fail;
    }

    info->width = parameters->width;
    info->height = parameters->height;
    if (video->format->duration != AV_NOPTS_VALUE && video->format->duration > 0) {
        info->duration = (double)video->format->duration / AV_TIME_BASE;
    } else if (video->stream->duration != AV_NOPTS_VALUE && video->stream->duration > 0) {
        info->duration = (double)video->stream->duration * av_q2d(video->stream->time_base);
    }
    info->frame_rate = seconds_of(video->stream->avg_frame_rate);
    if (info->frame_rate == 0) info->frame_rate = seconds_of(video->stream->r_frame_rate);
    info->quarter_turns = quarter_turns(video->stream);
    info->frame_count = video->stream->nb_frames > 0 ? video->stream->nb_frames : 0;
    snprintf(info->codec, sizeof info->codec, "%s", avcodec_get_name(parameters->codec_id));
    snprintf(info->container, sizeof info->container, "%s", video->format->iformat->name);
    info->is_pq = parameters->color_trc == AVCOL_TRC_SMPTE2084;
    info->is_hlg = parameters->color_trc == AVCOL_TRC_ARIB_STD_B67;
    info->primaries = parameters->color_primaries;
    *out = video;
    return IK_VIDEO_OK;

fail:
    ik_video_close(video);
    return status;
}

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

void ik_video_close(ik_video *video) {
    if (!video) return;
    sws_freeContext(video->scaler);
    av_freep(&video->scratch);
    av_frame_free(&video->frame);
    av_frame_free(&video->shown);
    av_frame_free(&video->pending);
    av_packet_free(&video->packet);
    avcodec_free_context(&video->decoder);
    avformat_close_input(&video->format);
    if (video->io) {
        av_freep(&video->io->buffer);
        avio_context_free(&video->io);
    }
    free(video);
}

#else

ik_video_status ik_video_open(const void *data, size_t size, int64_t max_pixels, ik_video **video,
                              ik_video_info *info, char *message, size_t message_size) {
    (void)data, (void)size, (void)max_pixels, (void)info;
    *video = NULL;
    if (message && message_size) snprintf(message, message_size, "this build has no video support (the Video trait)");
    return IK_VIDEO_UNAVAILABLE;
}

ik_video_status ik_video_frame(ik_video *video, double seconds, int keyframe_only, int32_t max_frames,
                               int32_t out_width, int32_t out_height, void *pixels, size_t stride, int rgb48,
                               double *frame_seconds, char *message, size_t message_size) {
    (void)video, (void)seconds, (void)keyframe_only, (void)max_frames, (void)out_width, (void)out_height;
    (void)pixels, (void)stride, (void)rgb48, (void)frame_seconds, (void)message, (void)message_size;
    return IK_VIDEO_UNAVAILABLE;
}

int32_t ik_video_frames_decoded(const ik_video *video) { (void)video; return 0; }

void ik_video_close(ik_video *video) { (void)video; }

#endif
