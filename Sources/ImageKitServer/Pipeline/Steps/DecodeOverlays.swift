import Foundation
import ImageKit

/// The images of `watermark()` and `frame()` filters, decoded once (an animation lays them on
/// every frame), under the source's pixel limit.
enum DecodeOverlays: ProcessingStep {
    static let spanName: String? = "imagekit.decode_overlays"

    static func applies(to context: ProcessingContext) -> Bool {
        // No filter runs on a kept GIF.
        !context.keepsGIF && context.operations.filters.contains { overlayURL(of: $0) != nil }
    }

    /// The URL of the image a `watermark()` or `frame()` filter lays on the picture.
    static func overlayURL(of filter: ImageOperations.Filter) -> String? {
        switch filter {
        case .watermark(let markURL, _, _, _, _, _): markURL
        case .frame(let patchURL): patchURL
        default: nil
        }
    }

    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        var options = ImageDecodingOptions.default
        options.limits.maxPixelsPerFrame = context.processor.maxPixels
        for url in context.operations.filters.compactMap(overlayURL) {
            guard context.overlays[url] == nil else { continue }
            guard let bytes = context.overlayBytes[url] else {
                throw ImageServiceError(.invalidArgument, "the image of a watermark or frame filter was not given")
            }
            do {
                context.overlays[url] = try context.processor.coders.decode(bytes, options: options).frames[0].bitmap
            } catch {
                throw ImageServiceError(error)
            }
        }
    }
}
