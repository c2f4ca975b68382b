// Spec: DEC-02, DEC-03.
/// The arithmetic of decode-time scaling.
public enum DecodeTarget {
    /// The output size for an upright source of `source` pixels with `frames` frames.
    ///
    /// - Thumbnail, aspect preserved: the largest size that fits inside the thumbnail size.
    /// - Thumbnail, not preserved: exactly the thumbnail size, each side capped at the source's.
    /// - Scale-down: the largest aspect-preserving size with `w × h × 4 × frames ≤ limit`.
    /// The smaller of both applies; the result is never larger than the source, never below 1×1 —
    /// unless `upscales`: a vector (SVG, a PDF page) has no pixels to protect, so it is drawn
    /// at the thumbnail size whether that is larger or smaller than its own (SDWebImage's
    /// vector coders do the same with a thumbnail size).
    public static func size(
        for source: PixelSize, frames: Int = 1, options: ImageDecodingOptions, upscales: Bool = false
    ) -> PixelSize {
        guard source.width > 0, source.height > 0 else { return source }
        var target = source
        if let thumbnail = options.thumbnailPixelSize, thumbnail.width > 0, thumbnail.height > 0 {
            if options.preservesAspectRatio {
                let scale = min(
                    Double(thumbnail.width) / Double(source.width), Double(thumbnail.height) / Double(source.height),
                    upscales ? .infinity : 1)
                target = scaled(source, by: scale, rounding: .toNearestOrAwayFromZero)
                // Rounding must not push a side over the box.
                target.width = min(target.width, thumbnail.width)
                target.height = min(target.height, thumbnail.height)
            } else {
                target =
                    upscales
                    ? thumbnail
                    : PixelSize(width: min(thumbnail.width, source.width), height: min(thumbnail.height, source.height))
            }
        }
        if let limit = options.scaleDownLimitBytes {
            let maxPixels = max(1, limit / 4 / max(frames, 1))
            if target.pixelCount > maxPixels {
                let scale = (Double(maxPixels) / Double(target.pixelCount)).squareRoot()
                var reduced = scaled(target, by: scale, rounding: .down)
                while reduced.pixelCount > maxPixels && (reduced.width > 1 || reduced.height > 1) {
                    if reduced.width >= reduced.height { reduced.width -= 1 } else { reduced.height -= 1 }
                }
                target = reduced
            }
        }
        return target
    }

    /// The target in the stored (not yet oriented) frame: width and height exchanged when the
    /// orientation will swap them.
    static func storedSize(
        for stored: PixelSize, orientation: ImageOrientation, frames: Int,
        options: ImageDecodingOptions
    ) -> PixelSize {
        let upright = orientation.swapsDimensions ? stored.transposed : stored
        let target = size(for: upright, frames: frames, options: options)
        return orientation.swapsDimensions ? target.transposed : target
    }

    private static func scaled(_ size: PixelSize, by scale: Double, rounding: FloatingPointRoundingRule) -> PixelSize {
        PixelSize(
            width: max(1, Int((Double(size.width) * scale).rounded(rounding))),
            height: max(1, Int((Double(size.height) * scale).rounded(rounding))))
    }
}
