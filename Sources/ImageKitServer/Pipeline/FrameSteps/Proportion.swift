import ImageKit

/// thumbor's `proportion()`: the frame scaled once more, after the canvas.
enum Proportion: FrameStep {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap {
        guard let proportion = context.plan.finalScale else { return frame }
        return try frame.resized(
            to: PixelSize(
                width: max(1, Int(Double(frame.width) * proportion)),
                height: max(1, Int(Double(frame.height) * proportion))))
    }
}
