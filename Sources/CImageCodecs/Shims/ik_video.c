// Video frames for posters and sprite sheets: libavformat demuxes a container held in memory,
// libavcodec decodes only from the key frame at or before the time asked up to the frame shown
// then, and libswscale converts that one frame to RGBA at the size asked (the decode-time
// thumbnail of a video). Memory: the caller's bytes, one kept frame, the decoder's own buffers.
#include "ik_video.h"

#include <stdio.h>

#ifdef IK_VIDEO
#include <libavcodec/avcodec.h>
#include "ik_av_messages.h"
#include "ik_video_internal.h"
#include <libavformat/avformat.h>
#include <libavutil/avstring.h>
#include <libavutil/display.h>
#include <libswscale/swscale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IO_BUFFER_SIZE = 64 * 1024 };


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

void ik_video_close(ik_video *video) { (void)video; }

#endif
