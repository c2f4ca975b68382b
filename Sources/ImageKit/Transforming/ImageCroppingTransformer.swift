/// Crops an image (every frame) to a rectangle, clamped to the image.
///
/// A rectangle that does not overlap the image is an error (``ImageError/Code/invalidArgument``).
/// Key: `SDImageCroppingTransformer({X,Y,W,H})`, `%f` numbers as SDWebImage prints them.
public struct ImageCroppingTransformer: ImageTransforming {
    /// The rectangle kept, in the image's pixels.
    public var rect: PixelRect

    /// A crop to `rect` (clipped to the image).
    public init(rect: PixelRect) {
        self.rect = rect
    }

    public var transformerKey: String {
        let numbers = [rect.x, rect.y, rect.width, rect.height].map { TransformerKeyFormat.decimal(Double($0)) }
        return "SDImageCroppingTransformer({\(numbers.joined(separator: ","))})"
    }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in try bitmap.cropped(to: rect) }
    }
}
