// Spec: TRK-03.
/// Mirrors an image (every frame) left–right and/or top–bottom; exact, no resampling.
///
/// Key: `SDImageFlippingTransformer(H,V)` with 1 or 0, as in SDWebImage (its documented example).
public struct ImageFlippingTransformer: ImageTransforming {
    /// Mirror left to right.
    public var horizontal: Bool
    /// Mirror top to bottom.
    public var vertical: Bool

    /// A flip along either axis or both.
    public init(horizontal: Bool, vertical: Bool) {
        self.horizontal = horizontal
        self.vertical = vertical
    }

    public var transformerKey: String { "SDImageFlippingTransformer(\(horizontal ? 1 : 0),\(vertical ? 1 : 0))" }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in
            try bitmap.flipped(horizontally: horizontal, vertically: vertical)
        }
    }
}
