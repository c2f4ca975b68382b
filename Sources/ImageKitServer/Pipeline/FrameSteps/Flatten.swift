import ImageKit

/// A background colour under the pixels left transparent (thumbor's `background_color`,
/// imgproxy's `background`); not on a GIF whose filters are skipped.
enum Flatten: FrameStep {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap {
        guard !context.keepsGIF, let background = context.operations.background, !frame.isOpaque else { return frame }
        return try frame.flattened(onto: background)
    }
}
