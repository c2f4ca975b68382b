import ImageKit

/// thumbor's `fill()` and imgproxy's `extend`: a canvas of the plan's size in the fill colour
/// (thumbor's `auto`: the image's median colour; `blur`: the image blurred and stretched), the
/// image centred on it.
enum Canvas: FrameStep {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap {
        guard let width = context.plan.canvasWidth, let height = context.plan.canvasHeight else { return frame }
        let operations = context.operations
        var fill = operations.fill
        if case .auto? = fill { fill = .color(medianColor(frame)) }
        return try canvas(frame, width: width, height: height, fill: fill, background: operations.background)
    }

    /// A canvas of `width`×`height` in the fill colour (or the image blurred), the image centred.
    static func canvas(
        _ bitmap: Bitmap, width: Int, height: Int, fill: ImageOperations.Fill?, background: RGBAColor?
    ) throws(ImageError) -> Bitmap {
        let buffer = try PixelBuffer(width: width, height: height)
        var base: Bitmap?
        switch fill {
        case .blur?:
            base = try bitmap.blurred(sigma: 25).resized(to: PixelSize(width: width, height: height))
        case .color(let color)?:
            buffer.fill(with: color)
        default:
            buffer.fill(with: background ?? .clear)
        }
        if let base { buffer.draw(base, x: 0, y: 0) }
        buffer.draw(bitmap, x: (width - bitmap.width) / 2, y: (height - bitmap.height) / 2)
        return buffer.freezeCheckingOpacity()
    }

    /// thumbor's `fill(auto)` colour: the median of each channel over the image's pixels.
    static func medianColor(_ bitmap: Bitmap) -> RGBAColor {
        let histograms = bitmap.channelHistograms()
        let half = (bitmap.width * bitmap.height + 1) / 2
        let medians = histograms.map { histogram -> UInt8 in
            var seen = 0
            for (value, count) in histogram.enumerated() {
                seen += count
                if seen >= half { return UInt8(value) }
            }
            return 255
        }
        return RGBAColor(red: medians[0], green: medians[1], blue: medians[2])
    }
}
