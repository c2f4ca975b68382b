import ImageKit

/// Whether the source is an image at all (its signature, read once), how it will be decoded, and whether
/// the answer is a still: an animation asked as a still format (JPEG, HEIC, JPEG XL) answers
/// its first frame, and only that frame is decoded. A GIF under rules that skip its filters
/// stays a GIF whatever is asked.
enum ReadSignature: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        let signature = context.signature
        guard signature.format != .unknown || context.video != nil else {
            throw ImageServiceError(.notAnImage, "the source is not an image")
        }
        let operations = context.operations
        var decoding = ImageDecodingOptions.default
        decoding.appliesOrientation = operations.autoRotate
        decoding.limits.maxPixelsPerFrame = context.processor.maxPixels
        decoding.decodesFramesLazily = false
        context.keepsGIF = operations.rules.skipsFiltersOnGIF && signature.format == .gif
        context.stillOutput =
            operations.still
            || (!context.keepsGIF && operations.format.map { !$0.keepsFrames } == true)
        if context.stillOutput { decoding.firstFrameOnly = true }
        context.decoding = decoding
        context.isVector = signature.format == .svg || signature.format == .pdf
    }
}
