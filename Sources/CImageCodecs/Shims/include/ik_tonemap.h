// HDR samples (PQ or HLG, any primaries) to 8-bit sRGB: the per-pixel loop of ImageKit's tone
// mapping. The curves arrive as tables the Swift side computes once per source; this loop only
// looks them up, so its cost does not depend on the transfer.
#pragma once
#include <stddef.h>
#include <stdint.h>

/// Intervals of the gain tables (`hlg_gain`, `tone_gain`): each holds IK_TONEMAP_STEPS + 1 entries
/// (read only when `code_gain` is NULL).
#define IK_TONEMAP_STEPS 4096
/// Entries of the sRGB encoding table, over linear light [0, 1].
#define IK_TONEMAP_SRGB_ENTRIES 16384

typedef struct ik_tonemap {
    /// Code value to linear light, 1.0 = SDR white (203 cd/m²); max_code + 1 entries. For HLG,
    /// scene light in [0, 1] (the OOTF comes from hlg_gain).
    const float *linear;
    uint32_t max_code;
    /// Non-zero: apply HLG's OOTF, gain = hlg_gain(Ys) with Ys the scene luminance in [0, 1].
    int hlg;
    float luma[3];
    const float *hlg_gain;
    /// The tone curve as a gain on max(R, G, B) = m, sampled at u = sqrt(m / tone_max); above
    /// tone_max the pixel is brought to 1.0 (the source's peak is the display's).
    const float *tone_gain;
    float tone_max;
    /// For PQ, the same gain indexed by max(R, G, B)'s code value (max_code + 1 entries): the
    /// EOTF is monotonic, so the largest code is the largest light. NULL for HLG.
    const float *code_gain;
    /// Source primaries to BT.709 primaries, linear light, row-major.
    float matrix[9];
    /// Linear [0, 1] to 8-bit sRGB: IK_TONEMAP_SRGB_ENTRIES entries.
    const uint8_t *srgb;
} ik_tonemap;

/// Tone-maps `height` rows of `width` pixels of `channels` (3 = RGB, 4 = RGBA, straight alpha)
/// 16-bit samples (`src_stride` samples apart) into RGBA8 rows (`dst_stride` bytes apart).
void ik_tonemap_rows(const ik_tonemap *map, const uint16_t *src, size_t src_stride, int channels, uint8_t *dst,
                     size_t dst_stride, int width, int height);

/// As `ik_tonemap_rows`, after averaging blocks of factor × factor samples (in code values; the
/// last row and column of blocks may be partial): writes ceil(width / factor) × ceil(height /
/// factor) pixels. So that a thumbnail maps the pixels it keeps, not the source's.
void ik_tonemap_rows_reduced(const ik_tonemap *map, const uint16_t *src, size_t src_stride, int channels,
                             int width, int height, int factor, uint8_t *dst, size_t dst_stride);
