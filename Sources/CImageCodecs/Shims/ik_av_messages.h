// Messages and logging shared by the shims that call FFmpeg's libraries (ik_video.c,
// ik_video_writer.c): an error copied into the caller's buffer, and FFmpeg kept quiet.
#pragma once
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <pthread.h>
#include <stdio.h>

static inline void ik_av_say(char *message, size_t size, const char *text) {
    if (message && size) snprintf(message, size, "%s", text);
}

/// `what: FFmpeg's reason for error`.
static inline void ik_av_say_error(char *message, size_t size, const char *what, int error) {
    char reason[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(error, reason, sizeof reason);
    if (message && size) snprintf(message, size, "%s: %s", what, reason);
}

static void ik_av_set_quiet(void) { av_log_set_level(AV_LOG_QUIET); }

/// FFmpeg's libraries log to stderr by default; a library must not.
static inline void ik_av_quiet(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ik_av_set_quiet);
}
