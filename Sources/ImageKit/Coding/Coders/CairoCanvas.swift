#if SVG || PDF
internal import CImageCodecs
import Foundation

// cairo's header is included by both librsvg's and poppler's modules: Clang gives its
// declarations to whichever of the two it builds first, so the one file that calls cairo imports
// both (the coders only pass the context on).
#if SVG
internal import CRSVG
#endif
#if PDF
internal import CPoppler
#endif

/// A cairo context drawing into a new ImageKit pixel buffer: what the vector coders (SVG, PDF)
/// draw with. The buffer starts transparent (pixel memory is reused, and cairo draws over what
/// it holds), or white paper; the result is straight RGBA8.
enum CairoCanvas {
    enum Background {
        case transparent
        case white
    }

    /// Runs `draw` with a cairo context (`cairo_t *`) on a `size` buffer, scaled by `scale`, and
    /// returns the bitmap (opaque when every pixel is).
    static func draw(
        size: PixelSize, background: Background, scale: (x: Double, y: Double) = (1, 1),
        _ draw: (OpaquePointer) throws(ImageError) -> Void
    ) throws(ImageError) -> Bitmap {
        var buffer = try PixelBuffer(width: size.width, height: size.height)
        if background == .transparent { buffer.clear() }
        guard
            let surface = cairo_image_surface_create_for_data(
                buffer.row(0), CAIRO_FORMAT_ARGB32, Int32(size.width), Int32(size.height), Int32(buffer.bytesPerRow))
        else { throw ImageError(.internalError, "cairo: no surface") }
        defer { cairo_surface_destroy(surface) }
        guard let context = cairo_create(surface) else { throw ImageError(.internalError, "cairo: no context") }
        defer { cairo_destroy(context) }
        if background == .white {
            cairo_set_source_rgb(context, 1, 1, 1)
            cairo_paint(context)
        }
        if scale != (1, 1) { cairo_scale(context, scale.x, scale.y) }
        try draw(context)
        cairo_surface_flush(surface)
        var opaque = true
        for y in 0..<size.height where ik_cairo_to_rgba_row(buffer.row(y), Int32(size.width)) == 0 { opaque = false }
        return buffer.freeze(isOpaque: opaque)
    }
}
#endif
