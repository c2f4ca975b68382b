// Video out through FFmpeg's libavcodec, libavformat and libswscale (the `Video` trait): RGBA
// frames with their start times become H.264 in MP4 (the index first: faststart) or VP9 in
// WebM, written into memory. In a build without the trait every call answers
// IK_VIDEO_UNAVAILABLE.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "ik_video.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    /// H.264 (libx264, 4:2:0, High profile) in MP4 with the index before the media data.
    IK_VIDEO_MP4_H264 = 0,
    /// VP9 (libvpx, 4:2:0) in WebM.
    IK_VIDEO_WEBM_VP9 = 1,
} ik_video_container;

typedef struct ik_video_writer ik_video_writer;

/// Starts a video of `width` × `height` RGBA frames; the video itself is that size rounded down
/// to even sides (4:2:0 needs them; 1 becomes 2). `quality` 1-100 maps to the encoder's constant
/// rate factor (80: x264's CRF 23). On failure `*writer` is NULL and `message` says why.
ik_video_status ik_video_writer_open(ik_video_container container, int32_t width, int32_t height, int32_t quality,
                                     ik_video_writer **writer, char *message, size_t message_size);

/// Adds a frame shown from `start_ms` (milliseconds from the start, each later than the last) to
/// the next frame's start or, for the last, to the end given at finishing. Pixels are composited
/// onto white where they are not opaque.
ik_video_status ik_video_writer_add(ik_video_writer *writer, const uint8_t *rgba, size_t stride, int64_t start_ms,
                                    char *message, size_t message_size);

/// Ends the video at `end_ms` and hands over its bytes (`*bytes`, freed with ik_video_bytes_free).
ik_video_status ik_video_writer_finish(ik_video_writer *writer, int64_t end_ms, uint8_t **bytes, size_t *size,
                                       char *message, size_t message_size);

/// Frees a writer, finished or not.
void ik_video_writer_close(ik_video_writer *writer);

void ik_video_bytes_free(uint8_t *bytes);

#ifdef __cplusplus
}
#endif
