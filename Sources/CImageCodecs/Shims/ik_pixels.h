// Row helpers shared by the C pixel loops (not part of the module's interface).
#pragma once
#include <stdint.h>

/// `count` RGBA8 pixels with colours multiplied by alpha (c × a / 255, rounded), into `out`.
void ik_premultiply_row(const uint8_t *_Nonnull row, uint8_t *_Nonnull out, int count);

/// Straight alpha again, in place: c × 255 / a, rounded (a table of 16.16 reciprocals; within one
/// level of the exact quotient), clamped to 255; a fully transparent pixel becomes 0,0,0,0.
void ik_unpremultiply_row(uint8_t *_Nonnull row, int count);

/// Whether the pixel loops that have an AVX2 copy use it: the processor has AVX2 and
/// `ik_set_avx2_allowed(0)` has not been called.
int ik_uses_avx2(void);
