#ifndef IK_VIDEO_INTERNAL_H
#define IK_VIDEO_INTERNAL_H

// An open video, shared by opening and probing it (ik_video.c) and decoding its frames
// (ik_video_frame.c). Only with the Video trait's libraries.

#include "ik_video.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>

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

#endif
