import Foundation
import ImageKit

/// The finished image in the chosen format, at the quality asked for that format, else the
/// request's, else the processor's default; `max_bytes` lowers the quality until it fits.
/// 415 for a format this build does not write.
enum Encode: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        guard let image = context.image else {
            throw ImageServiceError(.processingFailed, "a step needs the finished image before it is made")
        }
        let format = context.outputFormat, operations = context.operations
        guard let target = format.encodableFormat else {
            throw ImageServiceError(
                .unsupportedOutputFormat, "\(format.rawValue) output is not supported by this build")
        }
        let quality = operations.formatQuality[format] ?? operations.quality ?? context.processor.defaultQuality
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
}
