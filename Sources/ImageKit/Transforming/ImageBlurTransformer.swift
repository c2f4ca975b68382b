/// Blurs an image (every frame) with an approximate Gaussian (see ``Bitmap/blurred(sigma:)``).
///
/// `sigma` is the standard deviation in pixels: what SDWebImage's `blurRadius` and Pillow's
/// `GaussianBlur(radius)` mean too. Key: `SDImageBlurTransformer(SIGMA)`, `%f`.
public struct ImageBlurTransformer: ImageTransforming {
    /// The Gaussian's standard deviation in pixels.
    public var sigma: Double

    /// A Gaussian blur of `sigma` pixels.
    public init(sigma: Double) {
        self.sigma = sigma
    }

    public var transformerKey: String { "SDImageBlurTransformer(\(TransformerKeyFormat.decimal(sigma)))" }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in try bitmap.blurred(sigma: sigma) }
    }
}
