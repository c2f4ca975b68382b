/// Mirrors an image (every frame) left–right and/or top–bottom; exact, no resampling.
///
/// Key: `SDImageFlippingTransformer(H,V)` with 1 or 0, as in SDWebImage (TRK-03's example).
public struct ImageFlippingTransformer: ImageTransforming {
    public var horizontal: Bool
    public var vertical: Bool

    public init(horizontal: Bool, vertical: Bool) {
        self.horizontal = horizontal
        self.vertical = vertical
    }

    public var transformerKey: String { "SDImageFlippingTransformer(\(horizontal ? 1 : 0),\(vertical ? 1 : 0))" }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in try bitmap.flipped(horizontally: horizontal, vertically: vertical) }
    }
}
