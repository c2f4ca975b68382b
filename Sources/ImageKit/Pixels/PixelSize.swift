/// A size in pixels.
public struct PixelSize: Hashable, Sendable, CustomStringConvertible {
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int

    /// A size of `width` × `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// A square size.
    public init(_ side: Int) {
        self.init(width: side, height: side)
    }

    /// `width × height`, or `Int.max` when that overflows (a header's absurd size is then
    /// refused by the limits rather than trapping).
    public var pixelCount: Int {
        let (count, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? .max : count
    }
    public var description: String { "\(width)x\(height)" }
    /// Width and height exchanged (for EXIF orientations 5–8).
    public var transposed: PixelSize { PixelSize(width: height, height: width) }
}
