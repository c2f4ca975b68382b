import Foundation

// Spec: TRK-03.
/// Turns an image (every frame) counter-clockwise about its centre.
///
/// Multiples of 90° move whole pixels; other angles sample bilinearly in premultiplied alpha
/// with transparent corners (see ``Bitmap/rotated(byRadians:fitSize:)``). With `fitSize` the
/// canvas grows to hold the whole image, otherwise it keeps its size.
///
/// ```swift
/// let turned = try ImageRotationTransformer(degrees: 30, fitSize: true).transform(image)
/// ```
///
/// Key: `SDImageRotationTransformer(RADIANS,FIT)`; the angle is printed with up to 11 decimals,
/// truncated, so π/4 prints `0.78539816339` as in SDWebImage's documented example.
public struct ImageRotationTransformer: ImageTransforming {
    /// Counter-clockwise, in radians.
    public var angle: Double
    /// Grow the canvas to hold the whole rotated image (true) or keep the original size (false).
    public var fitSize: Bool

    /// A rotation by `angle` radians, counter-clockwise.
    public init(angle: Double, fitSize: Bool = true) {
        self.angle = angle
        self.fitSize = fitSize
    }

    /// A rotation by `degrees`, counter-clockwise.
    public init(degrees: Double, fitSize: Bool = true) {
        // Whole quarter turns stay exact multiples of π/2 so they take the exact path.
        self.init(angle: degrees / 180 * .pi, fitSize: fitSize)
    }

    public var transformerKey: String {
        "SDImageRotationTransformer(\(Self.truncatedDecimal(angle, digits: 11)),\(fitSize ? 1 : 0))"
    }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in try bitmap.rotated(byRadians: angle, fitSize: fitSize) }
    }

    /// `value` with at most `digits` decimals, cut (not rounded) and without trailing zeros.
    static func truncatedDecimal(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        // Print with more digits than kept, then cut: exact for every angle a caller writes.
        var text = String(format: "%.\(digits + 4)f", value)
        if let dot = text.firstIndex(of: ".") {
            text = String(text[..<text.index(dot, offsetBy: digits + 1)])
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }
}
