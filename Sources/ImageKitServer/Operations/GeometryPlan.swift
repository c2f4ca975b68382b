import Foundation
import ImageKit

/// Where every pixel of the output comes from: the crops, the scaled size, the canvas and the
/// turns, computed from the source's displayed size (EXIF orientation applied) and the
/// operations alone, before anything is decoded. It decides the decode-time thumbnail size, and
/// `/meta` and `/info` answer from it.
///
/// Each dialect's size arithmetic lives beside its grammar (``ImageOperations/DialectRules/Geometry``):
/// thumbor's follows thumbor 7.8's transformer step by step (its rounding included), so sizes
/// equal thumbor's for the same URL; imgproxy's follows imgproxy 3's documented resizing types.
///
/// ```swift
/// let request = try ImageRequest.parse(path: "/unsafe/fit-in/300x200/example.com/a.jpg")
/// let plan = GeometryPlan(sourceWidth: 640, sourceHeight: 480, request: request)
/// plan.outputWidth   // 267 … 300x225
/// ```
public struct GeometryPlan: Sendable, Hashable {
    /// A rectangle in pixels (ImageKit's).
    public typealias Rect = PixelRect

    /// The manual crop, in source pixels.
    public var manualCrop: Rect?
    /// The crop that makes the image the box's shape (fill), in pixels of the manually cropped
    /// image; its position follows the gravity and is final only once a smart gravity looked
    /// at the pixels (the size is final).
    public var fillCrop: Rect?
    /// The size the (cropped) image is scaled to; nil: not scaled.
    public var scaledWidth: Int?
    /// See ``scaledWidth``.
    public var scaledHeight: Int?
    /// A canvas the scaled image is placed on (thumbor `fill()`, imgproxy `extend`); nil: none.
    public var canvasWidth: Int?
    /// See ``canvasWidth``.
    public var canvasHeight: Int?
    /// Padding after the canvas, in output pixels: top, right, bottom, left (imgproxy `padding`,
    /// scaled by the effective dpr); nil: none.
    public var padding: [Int]?
    /// A second scaling after the canvas (thumbor `proportion()`).
    public var finalScale: Double?
    /// Clockwise quarter turns after everything else.
    public var rotation: Int
    /// Mirror left to right after scaling.
    public var flipHorizontal: Bool
    /// Mirror top to bottom after scaling.
    public var flipVertical: Bool
    /// The output's size.
    public var outputWidth: Int
    /// See ``outputWidth``.
    public var outputHeight: Int

    init(width: Int, height: Int) {
        rotation = 0
        flipHorizontal = false
        flipVertical = false
        outputWidth = width
        outputHeight = height
    }

    /// Python 3's `round(x)`: half to even.
    static func pythonRound(_ value: Double) -> Double { value.rounded(.toNearestOrEven) }
}
