/// A rectangle of whole pixels: `x`, `y` of its top-left pixel, `width` × `height`.
public struct PixelRect: Hashable, Sendable, CustomStringConvertible {
    /// The left edge, in pixels from the image's left.
    public var x: Int
    /// The top edge, in pixels from the image's top.
    public var y: Int
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int

    /// A rectangle with its top-left corner at (`x`, `y`).
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// True when the rectangle has no pixels.
    public var isEmpty: Bool { width <= 0 || height <= 0 }

    /// The part of this rectangle inside `other` (empty, with zero size, when they do not overlap).
    public func intersection(_ other: PixelRect) -> PixelRect {
        let left = max(x, other.x), top = max(y, other.y)
        // Widths may be anything a caller passes: saturate instead of overflowing.
        let right = min(
            x.addingReportingOverflow(width).overflow ? Int.max : x + width,
            other.x.addingReportingOverflow(other.width).overflow ? Int.max : other.x + other.width)
        let bottom = min(
            y.addingReportingOverflow(height).overflow ? Int.max : y + height,
            other.y.addingReportingOverflow(other.height).overflow ? Int.max : other.y + other.height)
        guard right > left, bottom > top else { return PixelRect(x: left, y: top, width: 0, height: 0) }
        return PixelRect(x: left, y: top, width: right - left, height: bottom - top)
    }

    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}
