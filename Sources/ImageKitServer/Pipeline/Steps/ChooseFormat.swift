import ImageKit

/// The answer's format: the one asked for (or negotiated from `Accept` before the pipeline),
/// else the source's when the service writes it, else JPEG or PNG for transparency; a GIF
/// whose filters are skipped stays a GIF (thumbor's `format()` is one of those filters). With
/// `best` asked, ``EncodeBest`` picks among the candidates instead.
enum ChooseFormat: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        guard let image = context.image else {
            throw ImageServiceError(.processingFailed, "a step needs the finished image before it is made")
        }
        context.outputFormat = context.operations.outputFormat(
            sourceFormat: ImageOperations.Format(context.signature.format), keepsGIF: context.keepsGIF,
            hasAlpha: !image.isOpaque, isAnimated: image.frameCount > 1)
        // `best`: Encode tries the candidates; a GIF under thumbor's rules, or video, stays what it is.
        let candidates = context.operations.bestCandidates
        context.triesBestFormat =
            !candidates.isEmpty && !(context.keepsGIF && context.outputFormat == .gif)
            && context.outputFormat.videoFormat == nil
    }
}
