extension Bitmap {
    /// The bitmap transformed by `orientation` so it stands upright (a new allocation, or `self`
    /// for ``ImageOrientation/up``).
    public func applying(_ orientation: ImageOrientation) throws(ImageError) -> Bitmap {
        if orientation == .up { return self }
        let swaps = orientation.swapsDimensions
        let outWidth = swaps ? height : width
        let outHeight = swaps ? width : height
        let output = try PixelBuffer(width: outWidth, height: outHeight)
        let source = baseAddress
        let sourceStride = bytesPerRow
        let w = width, h = height
        // For each output pixel (ox, oy), the stored pixel it comes from.
        for oy in 0..<outHeight {
            let row = UnsafeMutableRawPointer(output.row(oy)).assumingMemoryBound(to: UInt32.self)
            for ox in 0..<outWidth {
                let sx: Int, sy: Int
                switch orientation {
                case .up: (sx, sy) = (ox, oy)
                case .upMirrored: (sx, sy) = (w - 1 - ox, oy)
                case .down: (sx, sy) = (w - 1 - ox, h - 1 - oy)
                case .downMirrored: (sx, sy) = (ox, h - 1 - oy)
                case .leftMirrored: (sx, sy) = (oy, ox)
                case .right: (sx, sy) = (oy, h - 1 - ox)
                case .rightMirrored: (sx, sy) = (w - 1 - oy, h - 1 - ox)
                case .left: (sx, sy) = (w - 1 - oy, ox)
                }
                row[ox] = (source + sy * sourceStride + sx * 4).loadUnaligned(as: UInt32.self)
            }
        }
        return output.freeze(isOpaque: isOpaque)
    }
}

extension DecodedImage {
    /// Applies ``orientation`` to every frame if it has not been applied yet.
    public func applyingOrientation() throws(ImageError) -> DecodedImage {
        guard !isOrientationApplied, orientation != .up else {
            var copy = self
            copy.isOrientationApplied = true
            return copy
        }
        var copy = self
        for index in copy.frames.indices {
            copy.frames[index].bitmap = try copy.frames[index].bitmap.applying(orientation)
        }
        copy.isOrientationApplied = true
        return copy
    }
}
