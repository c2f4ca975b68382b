import Foundation

/// Progressive GIF state: a frame is shown once its data is complete.
struct GIFProgress {
    private var framesShown = 0

    mutating func preview(_ data: Data, options: ImageDecodingOptions) -> DecodedImage? {
        guard
            let image = try? data.withImageBytes({ bytes throws(ImageError) in
                try GIFCoder.decode(bytes, options: options, completeFramesOnly: true)
            }), image.frames.count > framesShown
        else { return nil }
        framesShown = image.frames.count
        return image
    }
}

extension GIFCoder: ProgressiveImageDecoding {
    /// A preview each time another frame is complete.
    public func makeProgressiveSession(for signature: ImageSignature, options: ImageDecodingOptions) -> (
        any ProgressiveDecodingSession
    )? {
        ProgressiveEngineSession(GIFProgress(), options: options) { $0.preview($1, options: $2) }
    }
}
