import Foundation
import ImageKit

/// The finished image in the chosen format, at the quality asked for that format, else the
/// request's, else the processor's default — or at the quality autoquality chooses
/// (``AutoQualityDefaults``); `max_bytes` lowers the quality until it fits. 415 for a format
/// this build does not write. `best` goes to ``EncodeBest``.
enum Encode: ProcessingStep {
    static let spanName: String? = "imagekit.encode"

    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        guard let image = context.image else {
            throw ImageServiceError(.processingFailed, "a step needs the finished image before it is made")
        }
        if context.triesBestFormat {
            try EncodeBest.run(image, &context)
            return
        }
        let format = context.outputFormat, operations = context.operations
        let quality = operations.formatQuality[format] ?? operations.quality ?? context.processor.defaultQuality
        if let video = format.videoFormat {
            try encodeVideo(image, as: video, quality: quality, &context)
            return
        }
        guard let target = format.encodableFormat else {
            throw ImageServiceError(
                .unsupportedOutputFormat, "\(format.rawValue) output is not supported by this build")
        }
        var options = ImageEncodingOptions(quality: Double(min(max(quality, 1), 100)) / 100)
        options.maxFileSize = operations.maxBytes
        let start = ContinuousClock.now
        defer { context.encodeTime += ContinuousClock.now - start }
        let (data, choice) = try encode(image, as: format, target, options: options, context)
        context.result = ProcessedImage(
            data: data, format: format, width: image.width, height: image.height, frameCount: image.frameCount,
            autoQuality: choice)
    }

    /// `image` as `format` at `options`' quality, or at the one autoquality chooses for it.
    static func encode(
        _ image: DecodedImage, as format: ImageOperations.Format, _ target: ImageFormat,
        options: ImageEncodingOptions, _ context: ProcessingContext
    ) throws(ImageServiceError) -> (Data, AutoQualityChoice?) {
        let operations = context.operations
        let coders = context.processor.coders
        do {
            guard !options.lossless,
                let search = context.processor.autoQuality.search(
                    for: operations.autoQuality,
                    hasOwnQuality: operations.quality != nil || operations.formatQuality[format] != nil,
                    format: format, pixels: image.width * image.height)
            else { return (try coders.encode(image, as: target, options: options), nil) }
            let chosen = try coders.encode(image, as: target, options: options, autoQuality: search)
            return (
                chosen.data,
                AutoQualityChoice(
                    quality: chosen.quality, metric: search.method.metric, score: chosen.score,
                    encodes: chosen.encodes)
            )
        } catch {
            throw ImageServiceError(error)
        }
    }

    /// An animation (or a still) as H.264 MP4 or VP9 WebM; 415 in a build without the `Video` trait.
    static func encodeVideo(
        _ image: DecodedImage, as video: VideoWriter.Format, quality: Int, _ context: inout ProcessingContext
    ) throws(ImageServiceError) {
        guard VideoWriter.isSupported else {
            throw ImageServiceError(.unsupportedOutputFormat, "\(video.rawValue) output needs the Video trait")
        }
        let start = ContinuousClock.now
        defer { context.encodeTime += ContinuousClock.now - start }
        do {
            let data = try VideoWriter.encode(image, as: video, quality: Double(min(max(quality, 1), 100)) / 100)
            context.result = ProcessedImage(
                data: data, format: context.outputFormat, width: max(2, image.width & ~1),
                height: max(2, image.height & ~1),
                frameCount: image.frameCount)
        } catch {
            throw ImageServiceError(error)
        }
    }
}
