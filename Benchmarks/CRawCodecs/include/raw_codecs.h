// Straight C decoders and encoders, the "raw library" baseline of `bench`: each calls its
// library directly, the way a C program would, into a fresh malloc'ed RGBA8 buffer per image.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A decoded image: `frames` RGBA8 canvases of width*height pixels, tightly packed.
typedef struct {
    unsigned char *_Nullable *_Nullable frames;
    int frame_count;
    int width;
    int height;
} ik_raw_image;

void ik_raw_image_free(ik_raw_image *_Nonnull image);

/// One reusable TurboJPEG decompressor (C programs keep one per thread).
void *_Nullable ik_raw_tj_decompressor(void);
void *_Nullable ik_raw_tj_compressor(void);
void ik_raw_tj_destroy(void *_Nullable handle);

int ik_raw_jpeg_decode(void *_Nonnull handle, const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
/// TurboJPEG's scaled decode: the smallest of its scaling factors (n/8) whose result still
/// covers `box` × `box` on the side that limits a fit, as a C thumbnailer would call it.
int ik_raw_jpeg_decode_scaled(void *_Nonnull handle, const void *_Nonnull data, size_t size, int box, ik_raw_image *_Nonnull out);
int ik_raw_png_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
int ik_raw_gif_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
int ik_raw_webp_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);

/// Encoders: return the encoded size (0 on failure) and free the output themselves.
size_t ik_raw_jpeg_encode(void *_Nonnull handle, const void *_Nonnull rgba, int width, int height, int quality, int progressive,
                          void *_Nullable *_Nullable keep);
size_t ik_raw_png_encode(const void *_Nonnull rgba, int width, int height, int alpha);
size_t ik_raw_webp_encode(const void *_Nonnull rgba, int width, int height, float quality);

// Photo formats (raw_formats.c). Decoders return -1 when the library is not built in.
int ik_raw_heif_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
int ik_raw_avif_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
int ik_raw_jxl_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
int ik_raw_tiff_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
/// Writers for the bench's synthetic files: the bytes in `*output` (malloc'ed; free them), 0 on failure.
size_t ik_raw_heif_encode(const void *_Nonnull rgba, int width, int height, int quality, void *_Nullable *_Nonnull output);
size_t ik_raw_jxl_encode(const void *_Nonnull rgba, int width, int height, float distance, void *_Nullable *_Nonnull output);
size_t ik_raw_tiff_encode(const void *_Nonnull rgba, int width, int height, void *_Nullable *_Nonnull output);
/// libavif's decode of the first image as RGBA samples at its depth (at least 10 bits), two bytes
/// each, into `*samples` (malloc'ed; free it): an HDR decode without tone mapping. 0 on success.
int ik_raw_avif_decode16(const void *_Nonnull data, size_t size, uint16_t *_Nullable *_Nonnull samples,
                         int *_Nonnull width, int *_Nonnull height);
/// A 10-bit 4:2:0 PQ / BT.2020 AVIF of 10-bit RGB samples (the bench's HDR photo).
size_t ik_raw_avif_encode_pq(const uint16_t *_Nonnull rgb10, int width, int height, void *_Nullable *_Nonnull output);
/// libavif's encoder straight (4:2:0, one quantizer, one thread): the output size.
size_t ik_raw_avif_encode(const void *_Nonnull rgba, int width, int height, int quantizer, int speed);
/// librsvg straight, as a C program would call it: the document from bytes, drawn into a cairo
/// image surface of width × height (premultiplied BGRA, left as cairo wrote it). 0 on success.
int ik_raw_svg_render(const void *_Nonnull data, size_t size, int width, int height);
/// An ICC profile made with Little CMS: 0 Display P3, 1 Adobe RGB (1998). malloc'ed.
void *_Nullable ik_raw_make_profile(int which, size_t *_Nonnull size);
/// Little CMS's default 8-bit RGBA transform from `icc` to its built-in sRGB (what a C program
/// would write), applied to width × height tightly packed pixels.
void *_Nullable ik_raw_lcms_transform(const void *_Nonnull icc, size_t size);
void ik_raw_lcms_apply(void *_Nonnull transform, const void *_Nonnull input, void *_Nonnull output, int width, int height);
void ik_raw_lcms_free(void *_Nonnull transform);

#ifdef __cplusplus
}
#endif
