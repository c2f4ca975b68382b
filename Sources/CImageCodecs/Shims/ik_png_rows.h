#ifndef IK_PNG_ROWS_H
#define IK_PNG_ROWS_H

// The fast PNG path's row work (ik_png_rows.c), shared with its chunk walk (ik_png_fast.c):
// undoing a row's filter and expanding an unfiltered row to RGBA8. Not exported.

#include <stddef.h>
#include <stdint.h>

#define IK_PNG_ROWS_API __attribute__((visibility("hidden")))

typedef struct {
    int color_type;
    int bit_depth;
    /// Palette and gray (depth <= 8) images: the RGBA pixel of every sample value.
    uint32_t table[256];
    int has_trns;
    /// tRNS colour of gray (in [0]) and RGB images, at the image's bit depth.
    uint16_t trns[3];
} ik_png_expander;

/// The RGBA8 pixel of the four samples, as it sits in memory.
IK_PNG_ROWS_API uint32_t ik_png_rgba(unsigned r, unsigned g, unsigned b, unsigned a);

/// Undoes one row's filter (`prior` is the row above, unfiltered). Returns 0, or -1 for a filter
/// type libpng rejects.
IK_PNG_ROWS_API int ik_png_unfilter(int filter, unsigned char *row, const unsigned char *prior, size_t length,
                                    size_t bpp);

/// Two consecutive Paeth rows: `first` over `prior`, then `second` over `first`.
IK_PNG_ROWS_API void ik_png_unfilter_paeth_pair(unsigned char *first, unsigned char *second,
                                                const unsigned char *prior, size_t length, size_t bpp);

/// Writes `width` RGBA8 pixels from one unfiltered row.
IK_PNG_ROWS_API void ik_png_expand_row(const ik_png_expander *e, const unsigned char *src, unsigned char *dst,
                                       uint32_t width);

#endif
