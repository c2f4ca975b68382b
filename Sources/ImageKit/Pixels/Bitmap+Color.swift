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
    /// in all three colour channels.
    public func grayscaled() throws(ImageError) -> Bitmap {
        let output = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let source = UnsafeRawPointer(baseAddress + y * bytesPerRow)
            let destination = UnsafeMutableRawPointer(output.row(y))
            var x = 0
            while x + 8 <= width {
                let pixels = source.loadUnaligned(fromByteOffset: x * 4, as: SIMD8<UInt32>.self)
                destination.storeBytes(of: Self.gray(pixels), toByteOffset: x * 4, as: SIMD8<UInt32>.self)
                x += 8
            }
            while x < width {
                let pixel = source.loadUnaligned(fromByteOffset: x * 4, as: UInt32.self)
                let gray = Self.gray(SIMD8<UInt32>(repeating: pixel))[0]
                destination.storeBytes(of: gray, toByteOffset: x * 4, as: UInt32.self)
                x += 1
            }
        }
        return output.freeze(isOpaque: isOpaque)
    }

    @inline(__always)
    private static func gray(_ pixels: SIMD8<UInt32>) -> SIMD8<UInt32> {
        let red = pixels & 0xFF, green = (pixels &>> 8) & 0xFF, blue = (pixels &>> 16) & 0xFF
        let luma = (red &* 19595 &+ green &* 38470 &+ blue &* 7471 &+ 0x8000) &>> 16
        return luma &* 0x01_0101 | (pixels & 0xFF00_0000)
    }
}
