import ImageKit

/// Decodes at the smallest size that still has every pixel the plan needs (a decode-time
/// thumbnail: DCT scaling for JPEG, scaled WebP decodes, a HEIC's thumbnail item …). Without a
/// crop the decoder makes the plan's exact size itself, one resample in all; a vector is drawn
/// at the size the plan needs, larger or smaller than its own; an animation, or a source
/// decoded earlier, is used as it is.
enum ScaleOnLoad: ProcessingStep {
    static let spanName: String? = "imagekit.decode"

    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        if let early = context.earlyDecode {
            context.decoded = early
            return
        }
        let source = context.sourceSize, region = context.region, target = context.targetSize
        let scale = min(
            Double(target.width) / Double(region.width), Double(target.height) / Double(region.height))
        guard scale < 1 || (context.isVector && scale != 1), !context.animated else {
            context.decoded = try context.decode(context.decoding)
            return
        }
        var scaled = context.decoding
        if region.width == source.width && region.height == source.height {
            scaled.thumbnailPixelSize = target
            scaled.preservesAspectRatio = false
        } else {
            scaled.thumbnailPixelSize = PixelSize(
                width: max(1, Int((Double(source.width) * scale).rounded(.up))),
                height: max(1, Int((Double(source.height) * scale).rounded(.up))))
        }
        context.decoded = try context.decode(scaled)
    }
}
