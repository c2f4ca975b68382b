// Video frames through FFmpeg's libavformat, libavcodec and libswscale (the `Video` trait): a
// container read from memory, its first video stream's facts, and the frame shown at a time,
// scaled straight to the size asked. In a build without the trait every call answers
// IK_VIDEO_UNAVAILABLE.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    IK_VIDEO_OK = 0,
    /// A container libavformat recognises but cannot read: cut short or damaged.
    IK_VIDEO_INVALID = 1,
    /// A container with no video stream (audio only, say).
    IK_VIDEO_NO_VIDEO = 2,
    /// A video stream whose codec this build cannot decode.
    IK_VIDEO_UNSUPPORTED_CODEC = 3,
    /// The coded size is over the pixel limit: refused before anything is decoded.
    IK_VIDEO_TOO_LARGE = 4,
    /// More frames would have to be decoded to reach the time than the limit allows.
    IK_VIDEO_FRAME_LIMIT = 5,
    /// The decoder failed on the stream's data, or no frame came out of it.
    IK_VIDEO_DECODE_FAILED = 6,
    /// Out of memory, or another failure that is not the data's fault.
    IK_VIDEO_INTERNAL = 7,
    /// This build has no video support (the trait is off).
    IK_VIDEO_UNAVAILABLE = 8,
    /// Bytes no demuxer recognises: not a video.
    IK_VIDEO_UNRECOGNISED = 9,
} ik_video_status;

typedef struct ik_video ik_video;

typedef struct {
    /// Seconds; 0 when the container does not say.
    double duration;
    /// The coded frame size, before rotation.
    int32_t width, height;
    /// Frames per second (the stream's average); 0 when unknown.
    double frame_rate;
    /// Clockwise quarter turns to show the frame upright (0-3), from the display matrix.
    int32_t quarter_turns;
    /// The stream's frame count when the container records it; 0 otherwise.
    int64_t frame_count;
    /// libavcodec's short codec name ("h264", "hevc", "vp9", "av1" ...).
    char codec[32];
    /// libavformat's short container name ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm" ...).
    char container[64];
    /// The transfer function is PQ (SMPTE ST 2084) or HLG (ARIB STD-B67): an HDR stream.
    int32_t is_pq, is_hlg;
    /// The colour primaries' CICP code (1 BT.709, 9 BT.2020, 2 unspecified ...).
    int32_t primaries;
} ik_video_info;

/// Opens `size` bytes of a container (they must outlive the handle) and reads its facts into
/// `info`. Refuses a stream whose coded size is over `max_pixels` before opening its decoder.
/// On failure `*video` is NULL and `message` says why.
ik_video_status ik_video_open(const void *data, size_t size, int64_t max_pixels, ik_video **video,
                              ik_video_info *info, char *message, size_t message_size);

/// Decodes the frame shown at `seconds` — the last frame that starts at or before it (the first
/// frame when the time is before it, the last when after the end) — or, with `keyframe_only`, the
/// key frame at or before it, without decoding any frame after that key frame. Seeks to the key
/// frame at or before the time and decodes forward, at most `max_frames` frames. The frame is
/// converted at `out_width` × `out_height` in the coded orientation into `pixels`, `stride` bytes
/// per row: RGBA8 (alpha 255), or with `rgb48` 16-bit RGB code values in the stream's own transfer
/// and primaries (for tone mapping an HDR stream). `frame_seconds` gets the frame's own time.
ik_video_status ik_video_frame(ik_video *video, double seconds, int keyframe_only, int32_t max_frames,
                               int32_t out_width, int32_t out_height, void *pixels, size_t stride, int rgb48,
                               double *frame_seconds, char *message, size_t message_size);

/// Frames decoded by the last ik_video_frame call (for limits and tests).
int32_t ik_video_frames_decoded(const ik_video *video);

void ik_video_close(ik_video *video);

#ifdef __cplusplus
}
#endif
