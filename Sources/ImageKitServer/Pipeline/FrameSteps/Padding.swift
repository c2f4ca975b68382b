import ImageKit

/// imgproxy's `padding`: margins in output pixels (already scaled by the dpr in the plan), in
/// the background colour or transparent.
enum Padding: FrameStep {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap {
        guard let padding = context.plan.padding else { return frame }
        return try frame.padded(
            top: padding[0], right: padding[1], bottom: padding[2], left: padding[3],
            color: context.operations.background ?? .clear)
    }
}
