import Foundation
import ImageKit

/// The finished image in the chosen format, at the quality asked for that format, else the
/// request's, else the processor's default; `max_bytes` lowers the quality until it fits.
/// 415 for a format this build does not write. `best` goes to ``EncodeBest``.
enum Encode: ProcessingStep {
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
        let data: Data
        do {
            data = try context.processor.coders.encode(image, as: target, options: options)
        } catch {
            throw ImageServiceError(error)
        }
        context.result = ProcessedImage(
            data: data, format: format, width: image.width, height: image.height, frameCount: image.frameCount)
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
