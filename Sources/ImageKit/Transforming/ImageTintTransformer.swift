/// Tints an image (every frame): the colour laid over it source-atop, so transparent pixels
/// stay transparent and the tint's alpha says how strongly (see ``Bitmap/tinted(with:)``).
///
/// Key: `SDImageTintTransformer(#rrggbbaa)`.
public struct ImageTintTransformer: ImageTransforming {
    /// The colour laid over the image, with its alpha as the strength.
    public var color: RGBAColor

    /// A tint with `color`.
    public init(color: RGBAColor) {
        self.color = color
    }

    public var transformerKey: String { "SDImageTintTransformer(\(color.hexString))" }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in try bitmap.tinted(with: color) }
    }
}
