#pragma once

/// Registers a libheif decoder plugin that decodes HEVC with FFmpeg's libavcodec instead of
/// libde265, at a priority above libde265's (the package's `HEVCAVCodec` trait). Safe to call
/// any number of times from any thread. Returns 1 when the plugin is registered, 0 in a build
/// without the trait (libheif keeps its own decoder).
int ik_heif_avcodec_register(void);
