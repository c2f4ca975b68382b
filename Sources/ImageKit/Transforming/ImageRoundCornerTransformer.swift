/// Rounds the corners of an image (every frame), with an optional border inside the edge.
///
/// Key: `SDImageRoundCornerTransformer(RADIUS,CORNERS,BORDER_WIDTH,BORDER_COLOR)` as SDWebImage
/// prints it: `%f` numbers, UIKit's corner bits (all four: `UIRectCornerAllCorners`, ~0), the
/// colour as `#rrggbbaa` or `(null)`.
public struct ImageRoundCornerTransformer: ImageTransforming {
    /// The corner radius in pixels.
    public var radius: Double
    /// Which corners are rounded.
    public var corners: ImageCorners
    /// The border's width in pixels; 0 for none.
    public var borderWidth: Double
    /// The border's colour; nil draws no border.
    public var borderColor: RGBAColor?

    /// Rounds `corners` with `radius` pixels, with an optional border.
    public init(radius: Double, corners: ImageCorners = .all, borderWidth: Double = 0, borderColor: RGBAColor? = nil) {
        self.radius = radius
        self.corners = corners
        self.borderWidth = borderWidth
        self.borderColor = borderColor
    }

    public var transformerKey: String {
        let cornerBits = corners == .all ? UInt.max : corners.rawValue
        return "SDImageRoundCornerTransformer(\(TransformerKeyFormat.decimal(radius)),\(cornerBits),"
            + "\(TransformerKeyFormat.decimal(borderWidth)),\(borderColor?.hexString ?? "(null)"))"
    }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in
            try bitmap.roundingCorners(
                radius: radius, corners: corners, borderWidth: borderWidth, borderColor: borderColor)
        }
    }
}
