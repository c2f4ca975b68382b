import ImageKit

/// The plan's mirrors, then its quarter turns (the plan turns clockwise).
enum RotateAndFlip: FrameStep {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap {
        let plan = context.plan
        var frame = frame
        if plan.flipHorizontal || plan.flipVertical {
            frame = try frame.flipped(horizontally: plan.flipHorizontal, vertically: plan.flipVertical)
        }
        if plan.rotation != 0 { frame = try frame.rotated(quarterTurns: -plan.rotation) }
        return frame
    }
}
