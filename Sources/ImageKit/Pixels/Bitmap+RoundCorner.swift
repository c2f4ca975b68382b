#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which corners of a rectangle (UIKit's `UIRectCorner` bits).
public struct ImageCorners: OptionSet, Hashable, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// The top-left corner.
    public static let topLeft = ImageCorners(rawValue: 1 << 0)
    /// The top-right corner.
    public static let topRight = ImageCorners(rawValue: 1 << 1)
    /// The bottom-left corner.
    public static let bottomLeft = ImageCorners(rawValue: 1 << 2)
    /// The bottom-right corner.
    public static let bottomRight = ImageCorners(rawValue: 1 << 3)
    /// All four corners.
    public static let all: ImageCorners = [.topLeft, .topRight, .bottomLeft, .bottomRight]
}

extension Bitmap {
    /// The bitmap with rounded `corners` of `radius` pixels (clamped to half the shorter side)
    /// and an optional border of `borderWidth` pixels in `borderColor` drawn inside the edge.
    ///
    /// Outside the rounded shape pixels become transparent; the curve is anti-aliased by the
    /// pixel's distance to it. Only the margins are computed: the inside is copied.
    public func roundingCorners(
        radius: Double, corners: ImageCorners = .all, borderWidth: Double = 0,
        borderColor: RGBAColor? = nil
    ) throws(ImageError) -> Bitmap {
        guard radius.isFinite, radius >= 0, borderWidth.isFinite, borderWidth >= 0 else {
            throw ImageError(
                .invalidArgument, "corner radius \(radius) and border width \(borderWidth) must be finite and ≥ 0")
        }
        let w = Double(width), h = Double(height)
        let radius = min(radius, min(w, h) / 2)
        let border = borderColor == nil || borderColor?.alpha == 0 ? 0 : min(borderWidth, min(w, h) / 2)
        let output = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            UnsafeMutableRawPointer(output.row(y)).copyMemory(from: baseAddress + y * bytesPerRow, byteCount: width * 4)
        }
        let outer = RoundedRect(left: 0, top: 0, right: w, bottom: h, radius: radius, corners: corners)
        let inner = RoundedRect(
            left: border, top: border, right: w - border, bottom: h - border,
            radius: max(radius - border, 0), corners: corners)
        let color = borderColor ?? .clear
        let borderPremultiplied =
            SIMD4<Float>(Float(color.red), Float(color.green), Float(color.blue), 255) * (Float(color.alpha) / 255)
        // Rows within the corner (or border) margin are computed whole; rows between them only
        // in their left and right border strips.
        let margin = Int(max(radius, border).rounded(.up))
        let side = Int(border.rounded(.up))
        // A pointer, not the buffer: a nested function may not capture a noncopyable value
        // that is consumed afterwards (debug builds reject it).
        let pixels = output.baseAddress.assumingMemoryBound(to: UInt8.self)
        let outputRowBytes = output.bytesPerRow
        func shade(_ x: Int, _ y: Int) {
            let px = Double(x) + 0.5, py = Double(y) + 0.5
            let coverage = outer.coverage(px, py)
            let borderCoverage = border > 0 ? max(coverage - inner.coverage(px, py), 0) : 0
            if coverage >= 1 && borderCoverage <= 0 { return }
            let p = pixels + y * outputRowBytes + x * 4
            let alpha = Float(p[3])
            var pixel = SIMD4<Float>(
                Float(p[0]) * alpha / 255, Float(p[1]) * alpha / 255, Float(p[2]) * alpha / 255, alpha)
            if borderCoverage > 0 {
                // The border over the image (source-over), then the shape's coverage.
                let k = Float(borderCoverage)
                pixel = borderPremultiplied * k + pixel * (1 - k * Float(color.alpha) / 255)
            }
            pixel *= Float(coverage)
            UnsafeMutableRawPointer(p).storeBytes(of: PremultipliedPixel.pack(pixel), as: UInt32.self)
        }
        for y in 0..<height {
            if y < margin || y >= height - margin {
                for x in 0..<width { shade(x, y) }
            } else if side > 0 {
                for x in 0..<min(side, width) { shade(x, y) }
                for x in max(width - side, side)..<width { shade(x, y) }
            }
        }
        let staysOpaque = isOpaque && radius == 0 && (border == 0 || color.alpha == 255)
        return output.freeze(isOpaque: staysOpaque)
    }
}

/// A rectangle with some corners rounded, and how much of a pixel it covers.
struct RoundedRect {
    var left, top, right, bottom, radius: Double
    var corners: ImageCorners

    /// The fraction (0…1) of the pixel centred at (x, y) inside the shape, from its signed
    /// distance to the outline.
    func coverage(_ x: Double, _ y: Double) -> Double {
        guard right > left, bottom > top else { return 0 }
        let centerX = (left + right) / 2, centerY = (top + bottom) / 2
        let corner: ImageCorners =
            y < centerY ? (x < centerX ? .topLeft : .topRight) : (x < centerX ? .bottomLeft : .bottomRight)
        let r = corners.contains(corner) ? radius : 0
        let qx = abs(x - centerX) - ((right - left) / 2 - r)
        let qy = abs(y - centerY) - ((bottom - top) / 2 - r)
        let outside = hypot(max(qx, 0), max(qy, 0))
        let distance = outside + min(max(qx, qy), 0) - r
        return min(max(0.5 - distance, 0), 1)
    }
}
