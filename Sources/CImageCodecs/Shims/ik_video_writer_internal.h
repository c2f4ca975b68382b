#ifndef IK_VIDEO_WRITER_INTERNAL_H
#define IK_VIDEO_WRITER_INTERNAL_H

// A video being written, shared by opening and closing it (ik_video_writer.c) and adding its
// frames (ik_video_writer_frames.c). Only with the Video trait's libraries.

#include "ik_video_writer.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>

/// A growing byte buffer that behaves as a file: writes past the end extend it, seeks move one
/// cursor (the writer's) and the faststart reader keeps its own.
typedef struct {
    uint8_t *data;
    size_t size, capacity;
} memory_file;

typedef struct {
    memory_file *file;
    size_t position;
} memory_cursor;

/// A frame's start and how long it shows, to give each packet its duration (the encoder may
/// reorder frames, so packets are matched by their pts).
typedef struct {
    int64_t start, duration;
} frame_time;

struct ik_video_writer {
    ik_video_container container;
    int32_t source_width, source_height;
    memory_file file;
    memory_cursor cursor;
    AVFormatContext *format;
    AVCodecContext *encoder;
    AVStream *stream;
    AVFrame *frame;
    AVPacket *packet;
    struct SwsContext *scaler;
    frame_time *times;
    size_t time_count, time_capacity;
    /// What swscale reads: each frame's rows copied (and composited onto white) with room after
    /// every row, since swscale reads whole vectors past a row's end.
    uint8_t *scratch;
    size_t scratch_stride;
    int64_t last_start;
    int header_written;
};

#endif
