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
int ik_raw_png_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
int ik_raw_gif_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);
int ik_raw_webp_decode(const void *_Nonnull data, size_t size, ik_raw_image *_Nonnull out);

/// Encoders: return the encoded size (0 on failure) and free the output themselves.
size_t ik_raw_jpeg_encode(void *_Nonnull handle, const void *_Nonnull rgba, int width, int height, int quality, int progressive,
                          void *_Nullable *_Nullable keep);
size_t ik_raw_png_encode(const void *_Nonnull rgba, int width, int height, int alpha);
size_t ik_raw_webp_encode(const void *_Nonnull rgba, int width, int height, float quality);

#ifdef __cplusplus
}
#endif
