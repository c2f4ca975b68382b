// ImageKit's C shims: only what Swift cannot call safely itself.
//
// Inputs are `const void *` + `size_t`; outputs are caller-provided memory + stride. Errors come
// back as an `ik_status` plus a message copied into a caller buffer. No library type appears
// here, so Swift code that imports this module sees plain C types only.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    IK_OK = 0,
    /// The library rejected the data (corrupt, unsupported, CRC mismatch ...).
    IK_ERR_DECODE = 1,
    /// The input ended before the image did.
    IK_ERR_TRUNCATED = 2,
    /// The allocation callback refused the dimensions (limits) or could not allocate.
    IK_ERR_REFUSED = 3,
    /// Out of memory or another failure that is not the data's fault.
    IK_ERR_INTERNAL = 4,
    /// This path does not handle the data; decode it with the general one (libpng).
    IK_ERR_UNSUPPORTED = 5,
} ik_status;

// MARK: - GIF

typedef enum {
    IK_GIF_LZW_OK = 0,
    /// The data ends inside the frame's image data.
    IK_GIF_LZW_TRUNCATED = 1,
    /// Every pixel is decoded, but the data ends before the frame's block terminator.
    IK_GIF_LZW_TRAILING_TRUNCATED = 2,
    /// An end code before the last pixel.
    IK_GIF_LZW_EARLY_END = 3,
    /// A block terminator before the last pixel.
    IK_GIF_LZW_SHORT_DATA = 4,
    /// A code that cannot be decoded.
    IK_GIF_LZW_BAD_CODE = 5,
    /// A minimum code size outside 1-11.
    IK_GIF_LZW_BAD_CODE_SIZE = 6,
} ik_gif_lzw_status;

/// Decodes one frame's LZW image data into palette indices. `offset` is the frame's minimum code
/// size byte (the sub-blocks follow it); `output` holds `pixel_count` indices plus 8 bytes of
/// slack. `decoded` is how many indices were written (all of them unless the data is cut or
/// defective); `end` where the next record starts (after the block terminator), when the status
/// is OK, TRAILING_TRUNCATED, EARLY_END or SHORT_DATA, and never past `size`. `strict` 0 decodes as giflib does, 1 as
/// browsers do (ik_gif.c says how they differ).
ik_gif_lzw_status ik_gif_lzw_decode(const uint8_t *_Nonnull data, size_t size, size_t offset, int strict,
                                     uint8_t *_Nonnull output, size_t pixel_count, size_t *_Nonnull decoded,
                                     size_t *_Nonnull end);

/// Draws the first `decoded / width` lines (in stream order: with `interlaced`, GIF's four passes)
/// of a `width` x `height` frame of palette indices at (`left`, `top`) onto an RGBA canvas,
/// clipped to it: `palette` has 256 RGBA words, pixels of index `transparent` (-1: none) are
/// left as they are.
void ik_gif_draw(const uint8_t *_Nonnull indices, size_t decoded, int width, int height, int interlaced, int left,
                 int top, const uint32_t *_Nonnull palette, int transparent, uint8_t *_Nonnull canvas, size_t stride,
                 int canvas_width, int canvas_height);

// MARK: - PNG

/// What a PNG's IHDR says, filled before the allocation callback runs.
typedef struct {
    uint32_t width;
    uint32_t height;
    int bit_depth;
    int color_type;
    int interlaced;
    /// 1 when the decoded pixels can hold alpha < 255 (alpha channel or tRNS).
    int has_alpha;
    /// Bytes the decoder needs besides the output (the fast path's inflated stream); 0 for libpng.
    size_t working_bytes;
} ik_png_info;

/// Asked once, after the header is read, for the memory to decode RGBA8 rows into. Returns the
/// first row and sets `*stride` (>= width * 4), or NULL to refuse (limits, out of memory).
typedef void *_Nullable (*ik_png_alloc_fn)(void *_Nullable context, const ik_png_info *_Nonnull info,
                                           size_t *_Nonnull stride);

/// Decodes a whole PNG (the default image) to RGBA8, straight alpha: palette and gray expanded,
/// tRNS to alpha, 16-bit reduced to its high byte, interlacing resolved, gamma untouched.
/// Reads through IEND so that a file cut after its pixels is still reported as truncated.
/// `ignore_crc` accepts CRC mismatches (for streams ImageKit assembled itself).
ik_status ik_png_decode_rgba(const void *_Nonnull data, size_t size, int ignore_crc,
                             ik_png_alloc_fn _Nonnull alloc, void *_Nullable context,
                             ik_png_info *_Nonnull info, char *_Nonnull message, size_t message_size);

/// The one-shot fast path (ik_png_fast.c): chunks CRC-checked (critical ones and tRNS, unless
/// `check_crc` is 0), the IDAT stream inflated in one call by libdeflate, rows unfiltered with
/// SSE2 and expanded with the same transforms as `ik_png_decode_rgba`, byte for byte. Returns
/// IK_ERR_UNSUPPORTED for anything it leaves to libpng (any chunk or stream libpng treats
/// specially: damage, CRC mismatch, chunks out of place, APNG), possibly after `alloc` ran; the
/// caller then decodes with `ik_png_decode_rgba`. `info->working_bytes` is set before `alloc`.
ik_status ik_png_fast_decode(const void *_Nonnull data, size_t size, int check_crc, ik_png_alloc_fn _Nonnull alloc,
                             void *_Nullable context, ik_png_info *_Nonnull info, char *_Nonnull message,
                             size_t message_size);

/// CRC-32 (PNG, zlib) of `size` bytes, continuing from `crc` (0 to start), by libdeflate.
uint32_t ik_crc32(uint32_t crc, const void *_Nonnull data, size_t size);

/// Called once per decoded row, top to bottom, with `width * 4` bytes of RGBA8 (straight alpha).
typedef void (*ik_png_row_fn)(void *_Nullable context, const unsigned char *_Nonnull row, uint32_t y);
/// Called after the header: return 0 to go on, anything else to stop (limits, out of memory).
typedef int (*ik_png_header_fn)(void *_Nullable context, const ik_png_info *_Nonnull info);

/// Decodes a non-interlaced PNG one row at a time, handing each row to `row` (the same
/// transforms as `ik_png_decode_rgba`). Only one row is held, so a caller can shrink the image
/// while it is read. Interlaced images give IK_ERR_DECODE with the message "interlaced".
ik_status ik_png_decode_rows(const void *_Nonnull data, size_t size, ik_png_header_fn _Nonnull header,
                             ik_png_row_fn _Nonnull row, void *_Nullable context, ik_png_info *_Nonnull info,
                             char *_Nonnull message, size_t message_size);

/// Incremental PNG decoding with libpng's progressive reader (`png_process_data`).
typedef struct ik_png_progressive ik_png_progressive;

/// Asked once the header is known for a zero-filled RGBA8 buffer of width × height (stride in
/// `*stride`), into which rows are combined as they arrive; NULL refuses.
typedef void *_Nullable (*ik_png_progressive_alloc_fn)(void *_Nullable context, const ik_png_info *_Nonnull info,
                                                       size_t *_Nonnull stride);

ik_png_progressive *_Nullable ik_png_progressive_new(ik_png_progressive_alloc_fn _Nonnull alloc, void *_Nullable context);
/// Feeds the next bytes. IK_OK means "fine so far" (more may be needed).
ik_status ik_png_progressive_feed(ik_png_progressive *_Nonnull decoder, const void *_Nonnull data, size_t size,
                                  char *_Nonnull message, size_t message_size);
/// Progress: the current Adam7 pass (0 for non-interlaced images), the rows finished in that
/// pass (the highest row number seen + 1), passes completed, and whether the image is complete.
void ik_png_progressive_progress(const ik_png_progressive *_Nonnull decoder, int *_Nonnull pass,
                                 uint32_t *_Nonnull rows, int *_Nonnull passes_done, int *_Nonnull finished);
const ik_png_info *_Nonnull ik_png_progressive_info(const ik_png_progressive *_Nonnull decoder);
void ik_png_progressive_free(ik_png_progressive *_Nullable decoder);

/// Encodes RGBA8 rows (straight alpha) as an 8-bit PNG, RGBA when `keep_alpha`, else RGB
/// (ik_png_encode_fast.c): each row filtered as libpng's heuristic chooses, the rows compressed in
/// one libdeflate call at `level` (0...12; 1...9 compare with zlib's levels). The result is
/// malloc'ed; free it with `ik_free`.
ik_status ik_png_fast_encode(const void *_Nonnull pixels, uint32_t width, uint32_t height, size_t stride,
                             int keep_alpha, int level, void *_Nullable *_Nonnull out_data, size_t *_Nonnull out_size);

void ik_free(void *_Nullable pointer);

// MARK: - curl

/// Typed wrappers over the variadic `curl_easy_setopt` / `curl_easy_getinfo` / `curl_multi_setopt`.
/// Handles are passed as untyped pointers; the return value is the CURLcode / CURLMcode.
int ik_curl_easy_setopt_long(void *_Nonnull easy, int option, long value);
int ik_curl_easy_setopt_pointer(void *_Nonnull easy, int option, const void *_Nullable value);
int ik_curl_easy_setopt_offset(void *_Nonnull easy, int option, int64_t value);
int ik_curl_easy_getinfo_long(void *_Nonnull easy, int info, long *_Nonnull value);
int ik_curl_easy_getinfo_double(void *_Nonnull easy, int info, double *_Nonnull value);
int ik_curl_easy_getinfo_offset(void *_Nonnull easy, int info, int64_t *_Nonnull value);
int ik_curl_easy_getinfo_string(void *_Nonnull easy, int info, const char *_Nullable *_Nonnull value);
int ik_curl_multi_setopt_long(void *_Nonnull multi, int option, long value);

/// A curl share handle (TLS sessions, DNS and optionally cookies) that several threads' multi
/// handles may use at once: locking callbacks with one mutex per kind of data. Destroy it after
/// every easy handle that used it is cleaned up.
typedef struct ik_curl_share ik_curl_share;
ik_curl_share *_Nullable ik_curl_share_create(int share_cookies);
void *_Nonnull ik_curl_share_handle(ik_curl_share *_Nonnull shared);
void ik_curl_share_destroy(ik_curl_share *_Nullable shared);

/// Callback setters, typed so Swift never casts a function to a data pointer.
typedef size_t (*ik_curl_data_fn)(char *_Nullable data, size_t size, size_t count, void *_Nullable context);
typedef int (*ik_curl_xferinfo_fn)(void *_Nullable context, int64_t total, int64_t now, int64_t upload_total, int64_t upload_now);
int ik_curl_easy_set_write_function(void *_Nonnull easy, ik_curl_data_fn _Nonnull function);
int ik_curl_easy_set_header_function(void *_Nonnull easy, ik_curl_data_fn _Nonnull function);
int ik_curl_easy_set_xferinfo_function(void *_Nonnull easy, ik_curl_xferinfo_fn _Nonnull function);
/// `CURLOPT_OPENSOCKETFUNCTION`: the address policy's check before each connect.
/// The callback gets the `CURLOPT_OPENSOCKETDATA` pointer, the `curlsocktype` and a
/// `struct curl_sockaddr *`; it returns a socket or -1 (`CURL_SOCKET_BAD`) to refuse.
typedef int (*ik_curl_opensocket_fn)(void *_Nullable context, int purpose, void *_Nullable address);
int ik_curl_easy_set_opensocket_function(void *_Nonnull easy, ik_curl_opensocket_fn _Nonnull function);

#ifdef __cplusplus
}
#endif

// MARK: - Files (the disk cache)

#ifdef __cplusplus
extern "C" {
#endif

/// `fsetxattr`; returns 0 or an errno value.
int ik_fsetxattr(int fd, const char *_Nonnull name, const void *_Nonnull value, size_t size);
/// `getxattr`; returns the length read, or -errno.
long ik_getxattr(const char *_Nonnull path, const char *_Nonnull name, void *_Nonnull value, size_t size);
/// Sets only the access time of `path` (the modification time is left alone); 0 or errno.
int ik_set_access_time(const char *_Nonnull path, int64_t seconds, long nanoseconds);

// MARK: - JPEG at 1/8 scale

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

// MARK: - Blur

/// Blurs RGBA8 `source` into `destination` (same size, separate memory) with a cascade of box
/// blurs of the given radii (each 0...127; 0 skips), rows first, then columns; edges repeat their
/// outermost pixels. With `premultiply`, colours are weighted by alpha while blurring (for images
/// that are not opaque). SSE2, and AVX2 where the processor has it. IK_ERR_INTERNAL: bad
/// arguments or out of memory for the two line buffers.
ik_status ik_box_blur_rgba(const uint8_t *_Nonnull source, size_t source_stride, uint8_t *_Nonnull destination,
                           size_t destination_stride, int width, int height, const int *_Nonnull radii,
                           int radius_count, int premultiply);

// MARK: - Resampling

/// Scales RGBA8 `source` (src_w × src_h) to `destination` (dst_w × dst_h): an integer box
/// average of box_x × box_y pixels first (box_y ≤ 257), then a horizontal and a vertical filter
/// with 14-bit weights: output pixel x takes `h_counts[x]` taps from reduced column
/// `h_starts[x]` with weights `h_weights[x * h_stride ...]` (each pixel's weights summing to
/// 1 << 14), and likewise for rows. The intermediate is 8-bit, as in Pillow. With `premultiply`
/// the filtering happens in premultiplied alpha. IK_ERR_INTERNAL: bad arguments or out of memory.
ik_status ik_resample_rgba(const uint8_t *_Nonnull source, size_t source_stride, int src_w, int src_h, int box_x,
                           int box_y, uint8_t *_Nonnull destination, size_t destination_stride, int dst_w, int dst_h,
                           const int32_t *_Nonnull h_starts, const int32_t *_Nonnull h_counts,
                           const int16_t *_Nonnull h_weights, int h_stride, const int32_t *_Nonnull v_starts,
                           const int32_t *_Nonnull v_counts, const int16_t *_Nonnull v_weights, int v_stride,
                           int premultiply);

// MARK: - Quarter turns

/// Fills `out_width × out_height` RGBA8 pixels: output pixel (ox, oy) is the source pixel at byte
/// `origin + ox * step_x + oy * step_y`, where step_x is ± the source stride and step_y ± 4 (the
/// orientations that swap width and height). 4 × 4 SSE2 transposes in 32 × 32 tiles.
void ik_remap_transposed_rgba(const uint8_t *_Nonnull source, size_t source_stride, uint8_t *_Nonnull destination,
                              size_t destination_stride, int out_width, int out_height, ptrdiff_t origin,
                              ptrdiff_t step_x, ptrdiff_t step_y);

// MARK: - Grayscale

/// Writes RGBA8 `source` in shades of grey into `destination` (may be the same memory):
/// L = (19595 R + 38470 G + 7471 B + 2^15) >> 16 in the colour channels, alpha kept.
void ik_grayscale_rgba(const uint8_t *_Nonnull source, size_t source_stride, uint8_t *_Nonnull destination,
                       size_t destination_stride, int width, int height);

/// Allows (the default) or forbids the AVX2 copies of the blur and resampling loops, so that
/// tests can run the SSE2 ones on a processor that has AVX2.
void ik_set_avx2_allowed(int allowed);

// MARK: - Colour

/// Entries of the output table of ``ik_color_matrix_trc``: linear light 0...1 in 1/16383 steps.
#define IK_COLOR_OUT_ENTRIES 16384

/// Converts RGBA8 pixels in place: each colour channel through its input table (`lin`, 3 × 256
/// floats, linear light), the 3 × 3 row-major `matrix`, then `out` (IK_COLOR_OUT_ENTRIES bytes,
/// the index being the clamped value × (entries − 1), rounded). `out32` holds the same table
/// widened to int32 for the AVX2 gathers (NULL: scalar only). Alpha is left as it is.
void ik_color_matrix_trc(uint8_t *_Nonnull pixels, size_t stride, int width, int height, const float *_Nonnull lin,
                         const float *_Nonnull matrix, const uint8_t *_Nonnull out, const int32_t *_Nullable out32);

/// Maps each colour channel of RGBA8 pixels through its own 256-entry table (`table`: R, G, B
/// tables one after the other), alpha kept: for transforms that act on each channel alone.
void ik_color_lut_rgb(uint8_t *_Nonnull pixels, size_t stride, int width, int height, const uint8_t *_Nonnull table);

/// Straight alpha again, in place: c × 255 / a, rounded (a table of 16.16 reciprocals; within one
/// level of the exact quotient), clamped to 255; a fully transparent pixel becomes 0,0,0,0.
void ik_unpremultiply_row(uint8_t *_Nonnull row, int count);

/// Widens one row of 8-bit gray (1), gray + alpha (2), RGB (3) or RGBA (4) samples to RGBA8.
void ik_expand_to_rgba(const uint8_t *_Nonnull source, uint8_t *_Nonnull destination, int width, int channels);

// MARK: - threads

/// Names the calling thread (at most 15 bytes are kept), as debuggers and `top -H` show it.
void ik_thread_set_name(const char *_Nonnull name);

#ifdef __cplusplus
}
#endif
