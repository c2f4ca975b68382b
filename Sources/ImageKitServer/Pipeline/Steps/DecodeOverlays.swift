import Foundation
import ImageKit

/// The images of `watermark()` and `frame()` filters, decoded once (an animation lays them on
/// every frame), under the source's pixel limit.
enum DecodeOverlays: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        guard !context.keepsGIF else { return }  // no filter runs on a kept GIF
        var options = ImageDecodingOptions.default
        options.limits.maxPixelsPerFrame = context.processor.maxPixels
        for filter in context.operations.filters {
            let url: String
            switch filter {
            case .watermark(let markURL, _, _, _, _, _): url = markURL
            case .frame(let patchURL): url = patchURL
            default: continue
            }
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
