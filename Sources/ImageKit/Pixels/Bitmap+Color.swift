internal import CImageCodecs

extension Bitmap {
    /// The bitmap with `color` laid over it source-atop: each pixel's colour moves toward the
    /// tint by the tint's alpha, and the pixel keeps its own alpha (SDWebImage's tint).
    public func tinted(with color: RGBAColor) throws(ImageError) -> Bitmap {
        if color.alpha == 0 { return self }
        let output = try PixelBuffer(width: width, height: height)
        // Weight 0…256 so that alpha 255 replaces the colour entirely.
        let weight = UInt32(color.alpha) + UInt32(color.alpha >> 7)
        let tint = UInt32(color.red) | UInt32(color.green) << 8 | UInt32(color.blue) << 16
        for y in 0..<height {
            let source = UnsafeRawPointer(baseAddress + y * bytesPerRow).assumingMemoryBound(to: UInt32.self)
            let destination = UnsafeMutableRawPointer(output.row(y)).assumingMemoryBound(to: UInt32.self)
            for x in 0..<width {
                let pixel = source[x]
                destination[x] = BilinearSampler.lerp(pixel, tint | pixel & 0xFF00_0000, weight)
            }
        }
        return output.freeze(isOpaque: isOpaque)
    }

    /// The bitmap in shades of grey with its alpha kept: luma
    /// `L = (19595 R + 38470 G + 7471 B + 2¹⁵) >> 16` (ITU-R 601, Pillow's `convert("L")`)
    /// in all three colour channels (`ik_grayscale_rgba`, four pixels per SSE2 step).
    public func grayscaled() throws(ImageError) -> Bitmap {
        let output = try PixelBuffer(width: width, height: height)
        ik_grayscale_rgba(
            baseAddress.assumingMemoryBound(to: UInt8.self), bytesPerRow,
            output.baseAddress.assumingMemoryBound(to: UInt8.self), output.bytesPerRow,
            CInt(width), CInt(height))
        return output.freeze(isOpaque: isOpaque)
    }
}
