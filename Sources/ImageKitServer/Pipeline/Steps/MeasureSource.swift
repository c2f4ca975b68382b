import ImageKit

/// The source's displayed size (orientation applied), from its header when it can be read —
/// nothing is decoded then, and a source over the pixel limit is refused (422) before any
/// decode — else from a decode, which the later steps reuse. A GIF has no decode-time scaling:
/// it is decoded once, whole, which also tells its frame count.
enum MeasureSource: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        if let video = context.video, context.earlyDecode == nil {
            if context.operations.videoStills != nil {
                // A sprite sheet or an animation of the video's frames stands for the source.
                let stills = try context.decode(context.decoding)
                context.earlyDecode = stills
                context.sourceSize = PixelSize(width: stills.width, height: stills.height)
            } else {
                context.sourceSize = video.info.displaySize
            }
        } else if context.earlyDecode == nil {
            if let probe = ImageProbe(context.data) {
                let maxPixels = context.processor.maxPixels
                guard probe.width <= 100_000, probe.height <= 100_000, probe.width * probe.height <= maxPixels else {
                    throw ImageServiceError(
                        .tooManyPixels, "the source has \(probe.width)x\(probe.height) pixels, over \(maxPixels)")
                }
                let swaps = context.operations.autoRotate && probe.orientation.swapsDimensions
                context.sourceSize =
                    swaps
                    ? PixelSize(width: probe.height, height: probe.width)
                    : PixelSize(width: probe.width, height: probe.height)
            } else {
                let decoded = try context.decode(context.decoding)
                context.earlyDecode = decoded
                context.sourceSize = PixelSize(width: decoded.width, height: decoded.height)
            }
        }
        if context.signature.format == .gif, context.earlyDecode == nil {
            context.earlyDecode = try context.decode(context.decoding)
        }
        context.animated =
            !context.stillOutput && (context.signature.isAnimated || (context.earlyDecode?.frameCount ?? 1) > 1)
    }
}
