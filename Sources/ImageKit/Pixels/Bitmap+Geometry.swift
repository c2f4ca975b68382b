internal import CImageCodecs

/// Exact geometry: crops, flips and quarter turns move whole pixels and never resample.
extension Bitmap {
    /// The pixels inside `rect`, clamped to the bitmap.
    /// - Throws: ``ImageError/Code/invalidArgument`` when `rect` does not overlap the bitmap.
    public func cropped(to rect: PixelRect) throws(ImageError) -> Bitmap {
        let area = rect.intersection(PixelRect(x: 0, y: 0, width: width, height: height))
        guard !area.isEmpty else {
            throw ImageError(.invalidArgument, "crop \(rect) does not overlap the \(width)x\(height) image")
        }
        if area.width == width && area.height == height { return self }
        let output = try PixelBuffer(width: area.width, height: area.height)
        let rowBytes = area.width * 4
        for y in 0..<area.height {
            UnsafeMutableRawPointer(output.row(y))
                .copyMemory(from: baseAddress + (area.y + y) * bytesPerRow + area.x * 4, byteCount: rowBytes)
        }
        // A crop of an opaque image is opaque; of a translucent one, it may have become opaque
        // but finding out costs a scan the caller can do (`scanIsOpaque`).
        return output.freeze(isOpaque: isOpaque)
    }

    /// The bitmap mirrored left–right and/or top–bottom (`self` when neither).
    public func flipped(horizontally: Bool, vertically: Bool) throws(ImageError) -> Bitmap {
        switch (horizontally, vertically) {
        case (false, false): return self
        case (false, true):
            let output = try PixelBuffer(width: width, height: height)
            for y in 0..<height {
                UnsafeMutableRawPointer(output.row(y))
                    .copyMemory(from: baseAddress + (height - 1 - y) * bytesPerRow, byteCount: width * 4)
            }
            return output.freeze(isOpaque: isOpaque)
        case (true, false): return try remapped(.upMirrored)
        case (true, true): return try remapped(.down)
        }
    }

    /// The bitmap turned counter-clockwise by `quarterTurns` × 90° (any integer; 4 turns = none).
    public func rotated(quarterTurns: Int) throws(ImageError) -> Bitmap {
        switch ((quarterTurns % 4) + 4) % 4 {
        case 1: return try remapped(.left)
        case 2: return try remapped(.down)
        case 3: return try remapped(.right)
        default: return self
        }
    }

    /// Every output pixel copied from the stored pixel that `orientation` puts there (EXIF
    /// semantics: `.right` turns the stored pixels 90° clockwise to stand them upright).
    ///
    /// The mapping is affine, so the kernel walks the source with two fixed byte steps. Output
    /// is written in 32×32 tiles: for the transposing orientations a tile reads 32 source
    /// columns whose cache lines stay hot for the whole tile, which makes a 12 MP quarter turn
    /// about as fast as two memory copies instead of one cache miss per pixel; those go through
    /// `ik_remap_transposed_rgba`, which moves 4×4 blocks with SSE2 transposes.
    func remapped(_ orientation: ImageOrientation) throws(ImageError) -> Bitmap {
        let swaps = orientation.swapsDimensions
        let outWidth = swaps ? height : width
        let outHeight = swaps ? width : height
        let output = try PixelBuffer(width: outWidth, height: outHeight)
        let w = width, h = height, rowBytes = bytesPerRow
        // Byte offset of the source pixel for output (0, 0), and the steps for ox + 1 and oy + 1.
        let (origin, stepX, stepY): (Int, Int, Int)
        switch orientation {
        case .up: (origin, stepX, stepY) = (0, 4, rowBytes)
        case .upMirrored: (origin, stepX, stepY) = ((w - 1) * 4, -4, rowBytes)
        case .down: (origin, stepX, stepY) = ((h - 1) * rowBytes + (w - 1) * 4, -4, -rowBytes)
        case .downMirrored: (origin, stepX, stepY) = ((h - 1) * rowBytes, 4, -rowBytes)
        case .leftMirrored: (origin, stepX, stepY) = (0, rowBytes, 4)
        case .right: (origin, stepX, stepY) = ((h - 1) * rowBytes, -rowBytes, 4)
        case .rightMirrored: (origin, stepX, stepY) = ((h - 1) * rowBytes + (w - 1) * 4, -rowBytes, -4)
        case .left: (origin, stepX, stepY) = ((w - 1) * 4, rowBytes, -4)
        }
        if swaps {
            ik_remap_transposed_rgba(
                baseAddress.assumingMemoryBound(to: UInt8.self), bytesPerRow,
                output.baseAddress.assumingMemoryBound(to: UInt8.self), output.bytesPerRow,
                CInt(outWidth), CInt(outHeight), origin, stepX, stepY)
            return output.freeze(isOpaque: isOpaque)
        }
        let source = UnsafeRawPointer(baseAddress)
        let tile = 32
        var tileY = 0
        while tileY < outHeight {
            let tileBottom = min(tileY + tile, outHeight)
            var tileX = 0
            while tileX < outWidth {
                let tileRight = min(tileX + tile, outWidth)
                for oy in tileY..<tileBottom {
                    let destination = UnsafeMutableRawPointer(output.row(oy)).assumingMemoryBound(to: UInt32.self)
                    var offset = origin + oy * stepY + tileX * stepX
                    for ox in tileX..<tileRight {
                        destination[ox] = source.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
                        offset += stepX
                    }
                }
                tileX = tileRight
            }
            tileY = tileBottom
        }
        return output.freeze(isOpaque: isOpaque)
    }
}
