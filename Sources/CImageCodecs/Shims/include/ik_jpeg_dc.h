// JPEG at 1/8 scale: the DC-only decoder.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "ik_status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { IK_JPEG_DC_OK = 0, IK_JPEG_DC_UNSUPPORTED = 1, IK_JPEG_DC_ERROR = 2 };
/// Flags of ik_jpeg_decode_dc_scans for progressive files, whose data need not be there, nor is
/// checked, after the DC scans they ask for. IK_JPEG_DC_PARTIAL: done once the DC bits still
/// missing (successive approximation) could move no pixel more than 2 levels (they are
/// reconstructed at the middle of their range): the first DC scan of libjpeg's default script
/// at any quality above about 30. IK_JPEG_DC_FIRST_SCANS: done once every component has any DC
/// scan (a preview).
enum { IK_JPEG_DC_PARTIAL = 1, IK_JPEG_DC_FIRST_SCANS = 2 };

/// Decodes a Huffman JPEG (8-bit, grayscale or YCbCr; baseline with one interleaved scan, or
/// progressive) at 1/8 scale from its DC coefficients into RGBA; `out_width`/`out_height` must
/// be ceil(size / 8). A progressive file's AC scans are skipped, not decoded. Returns
/// IK_JPEG_DC_OK, or another code when the file is not handled or not clean (up to its EOI
/// marker) — the caller then decodes with TurboJPEG, which reports errors and partial data as
/// usual.
int ik_jpeg_decode_dc(const uint8_t *_Nonnull data, size_t size, uint8_t *_Nonnull rgba, size_t stride,
                      int out_width, int out_height);

/// ik_jpeg_decode_dc with `flags` (IK_JPEG_DC_PARTIAL); `*dc_end` is set to the offset just past
/// the marker after the DC scan that completed a progressive file's result (0 for a baseline file).
int ik_jpeg_decode_dc_scans(const uint8_t *_Nonnull data, size_t size, uint8_t *_Nonnull rgba, size_t stride,
                            int out_width, int out_height, int flags, size_t *_Nonnull dc_end);

/// How many bytes of a progressive JPEG the DC decoder needs with IK_JPEG_DC_PARTIAL (up to and
/// including the marker after the DC scan that makes its result final, found by walking markers and skipping
/// entropy-coded data without decoding it); 0 when `data` does not hold them yet, or the file is
/// not one the DC decoder takes.
size_t ik_jpeg_dc_scans_end(const uint8_t *_Nonnull data, size_t size);

#ifdef __cplusplus
}
#endif
