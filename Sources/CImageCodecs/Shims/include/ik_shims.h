// ImageKit's C shims: only what Swift cannot call safely itself.
//
// Inputs are `const void *` + `size_t`; outputs are caller-provided memory + stride. Errors come
// back as an `ik_status` plus a message copied into a caller buffer. No library type appears
// here, so Swift code that imports this module sees plain C types only.
//
// This umbrella header includes one header per concern; a C file includes only the ones it uses.
#pragma once
#include "ik_status.h"
#include "ik_build.h"
#include "ik_gif.h"
#include "ik_heif_avcodec.h"
#include "ik_video.h"
#include "ik_video_writer.h"
#include "ik_png.h"
#include "ik_curl.h"
#include "ik_files.h"
#include "ik_jpeg_dc.h"
#include "ik_pixel_loops.h"
#include "ik_thread.h"
#include "ik_tonemap.h"
#include "ik_quality.h"
