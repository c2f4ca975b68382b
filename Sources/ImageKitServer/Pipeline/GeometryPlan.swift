import Foundation
import ImageKit

/// Where every pixel of the output comes from: the crops, the scaled size, the canvas and the
/// turns, computed from the source's displayed size (EXIF orientation applied) and the
/// operations alone, before anything is decoded. It decides the decode-time thumbnail size, and
/// `/meta` and `/info` answer from it.
///
/// Each grammar keeps its own rules: thumbor's plan follows thumbor 7.8's transformer step by
/// step (its rounding included), so sizes equal thumbor's for the same URL; imgproxy's follows
/// imgproxy 3's documented resizing types.
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

    /// The plan for a source of the given size under the request's operations and their rules.
    ///
    /// - Parameters:
    ///   - sourceWidth: the source's width after orientation.
    ///   - sourceHeight: the source's height after orientation.
    ///   - sourceIsGIF: a GIF source; under rules that skip the filters on a GIF (thumbor runs none
    ///     of those after the resize — upscale, fill, proportion, rotate, blur … — unless a
    ///     gifsicle engine is configured), the plan skips them too, so sizes stay equal.
    ///   - sourceIsVector: an SVG or PDF source: it grows to the box without `enlarge` when the
    ///     rules say so (imgproxy's).
    ///   - request: the parsed operations.
    public init(
        sourceWidth: Int, sourceHeight: Int, sourceIsGIF: Bool = false, sourceIsVector: Bool = false,
        request: ImageRequest
    ) {
        let operations = request.operations
        switch operations.rules.geometry {
        case .thumbor:
            self = Self.thumbor(
                width: sourceWidth, height: sourceHeight, gif: sourceIsGIF && operations.rules.skipsFiltersOnGIF,
                operations: operations)
        case .imgproxy:
            self = Self.imgproxy(
                width: sourceWidth, height: sourceHeight, vector: sourceIsVector && operations.rules.enlargesVectors,
                operations: operations)
        }
    }

    init(width: Int, height: Int) {
        rotation = 0
        flipHorizontal = false
        flipVertical = false
        outputWidth = width
        outputHeight = height
    }

    /// Python 3's `round(x)`: half to even.
    static func pythonRound(_ value: Double) -> Double { value.rounded(.toNearestOrEven) }

    // MARK: thumbor

    /// thumbor 7.8's transformer: no_upscale clamps the request (after load), then manual crop,
    /// target size, fit-in resize or auto crop + resize, flips; then the post-transform filters
    /// that change the size — here in the order upscale, fill, proportion, rotate (thumbor runs
    /// them in URL order; with two of them in another order the plans differ), none for a GIF.
    static func thumbor(width sourceWidth: Int, height sourceHeight: Int, gif: Bool, operations: ImageOperations)
        -> GeometryPlan
    {
        var plan = GeometryPlan(width: sourceWidth, height: sourceHeight)
        plan.flipHorizontal = operations.flipHorizontal
        plan.flipVertical = operations.flipVertical
        let fitIn = operations.resizeMode == .fit || operations.resizeMode == .cover
        var width = Double(sourceWidth), height = Double(sourceHeight)
        // Manual crop, clamped to the image; an empty one is ignored.
        if case .region(let left, let top, let right, let bottom)? = operations.crop {
            let l = min(max(left, 0), sourceWidth), t = min(max(top, 0), sourceHeight)
            let r = min(max(right, 0), sourceWidth), b = min(max(bottom, 0), sourceHeight)
            if l < r && t < b {
                plan.manualCrop = Rect(x: l, y: t, width: r - l, height: b - t)
                width = Double(r - l)
                height = Double(b - t)
            }
        }
        // The request's sides: nil = 0 (derive), `orig` = the image's once cropped (thumbor crops
        // first and reads `orig` from what is left; it fails itself on `orig` beside a 0, where
        // the image's side is what the URL asks for).
        var requestWidth = operations.widthIsOriginal ? width : Double(operations.width)
        var requestHeight = operations.heightIsOriginal ? height : Double(operations.height)
        // no_upscale(): the request clamped to the image (under plain fit-in it changes nothing).
        if !operations.enlarge && operations.resizeMode != .fit {
            requestWidth = min(requestWidth, Double(sourceWidth))
            requestHeight = min(requestHeight, Double(sourceHeight))
        }

        // Target dimensions.
        var targetWidth: Double, targetHeight: Double
        if requestWidth == 0 && requestHeight == 0 {
            targetWidth = width
            targetHeight = height
        } else {
            targetWidth = requestWidth != 0 ? requestWidth : pythonRound(requestHeight * width / height)
            targetHeight = requestHeight != 0 ? requestHeight : pythonRound(requestWidth * height / width)
        }

        if fitIn {
            if operations.adaptive
                && ((width < height && targetWidth > targetHeight) || (width > height && targetWidth < targetHeight))
            {
                swap(&targetWidth, &targetHeight)
                swap(&requestWidth, &requestHeight)
            }
            let full = operations.resizeMode == .cover
            if full || !(targetWidth >= width && targetHeight >= height) {
                let sign = full ? -1.0 : 1.0
                var resizeWidth = targetWidth, resizeHeight = targetHeight
                if width / targetWidth * sign >= height / targetHeight * sign {
                    resizeHeight = pythonRound(height * targetWidth / width + 1e-5)
                    resizeWidth = targetWidth
                } else {
                    resizeHeight = targetHeight
                    resizeWidth = pythonRound(width * targetHeight / height + 1e-5)
                }
                requestWidth = max(requestWidth, resizeWidth)
                requestHeight = max(requestHeight, resizeHeight)
                width = Double(Int(resizeWidth))
                height = Double(Int(resizeHeight))
                plan.scaledWidth = Int(width)
                plan.scaledHeight = Int(height)
            }
        } else {
            if operations.resizeMode != .force {
                plan.fillCrop = Self.thumborAutoCrop(
                    width: width, height: height, targetWidth: targetWidth, targetHeight: targetHeight)
                if let crop = plan.fillCrop {
                    width = Double(crop.width)
                    height = Double(crop.height)
                }
            }
            if !(targetWidth == width && targetHeight == height) {
                width = Double(max(1, Int(targetWidth)))
                height = Double(max(1, Int(targetHeight)))
                plan.scaledWidth = Int(width)
                plan.scaledHeight = Int(height)
            }
        }

        guard !gif else {
            plan.outputWidth = Int(width)
            plan.outputHeight = Int(height)
            return plan
        }
        // upscale(): a fit-in result smaller than the request on both sides grows to it.
        if operations.enlarge && fitIn && !(width >= requestWidth || height >= requestHeight) {
            if width / requestWidth >= height / requestHeight {
                height = Double(Int(height * requestWidth / width))
                width = requestWidth
            } else {
                width = Double(Int(width * requestHeight / height))
                height = requestHeight
            }
            plan.scaledWidth = Int(width)
            plan.scaledHeight = Int(height)
        }
        // fill(): a canvas of the request's size (the image's on a 0 side), the image centred.
        if operations.fill != nil {
            let canvasWidth = requestWidth != 0 ? requestWidth : width
            let canvasHeight = requestHeight != 0 ? requestHeight : height
            plan.canvasWidth = Int(canvasWidth)
            plan.canvasHeight = Int(canvasHeight)
            width = canvasWidth
            height = canvasHeight
        }
        // proportion(f): the result scaled by f, for 0 < f ≤ 1 and a result of at least 1×1.
        if let proportion = operations.proportion, proportion > 0, proportion <= 1, width * proportion >= 1,
            height * proportion >= 1
        {
            plan.finalScale = proportion
            width = Double(Int(width * proportion))
            height = Double(Int(height * proportion))
        }
        plan.rotation = ((operations.rotate % 360 + 360) % 360) / 90
        if plan.rotation % 2 == 1 { swap(&width, &height) }
        plan.outputWidth = Int(width)
        plan.outputHeight = Int(height)
        return plan
    }

    /// thumbor's auto crop: the box's shape cut out of the image (ratios compared at two
    /// decimals), centred on the gravity; nil when the shapes already match.
    static func thumborAutoCrop(width: Double, height: Double, targetWidth: Double, targetHeight: Double) -> Rect? {
        let boxWidth = targetWidth == 0 ? 1 : targetWidth, boxHeight = targetHeight == 0 ? 1 : targetHeight
        func ratio(_ value: Double) -> Double { (value * 100).rounded(.toNearestOrEven) / 100 }
        guard ratio(width / height) != ratio(boxWidth / boxHeight) else { return nil }
        let cropWidth: Double, cropHeight: Double
        if targetWidth / width > targetHeight / height {
            cropWidth = width
            cropHeight = pythonRound(width * targetHeight / boxWidth)
        } else {
            cropWidth = pythonRound((targetWidth * height / boxHeight).rounded(.up))
            cropHeight = height
        }
        // Centred here; the pipeline moves it to the gravity (or the smart region).
        let left = pythonRound(min(max((width / 2).rounded(.down) - cropWidth / 2, 0), width - cropWidth))
        let top = pythonRound(min(max((height / 2).rounded(.down) - cropHeight / 2, 0), height - cropHeight))
        return Rect(
            x: Int(left), y: Int(top), width: Int(min(left + cropWidth, width) - left),
            height: Int(min(top + cropHeight, height) - top))
    }

    // MARK: imgproxy

    /// imgproxy's geometry, step by step as its `calcScale`, `calcSizes` and `cropToResult` take
    /// it: a shrink factor per side from the box (`fit`: the larger, `fill`/`fill-down`: the
    /// smaller, `force`: each apart, `auto`: fill when the image and the box are both portrait or
    /// both landscape, else fit; a missing side follows the other), divided by `zoom`; without
    /// `enlarge` no side grows (and `dpr` is lowered to what the source allows); `min-width` /
    /// `min-height` lower the shrink until the side reaches them; then the scaled image is cut
    /// to the target (box × the effective dpr × zoom, `fill-down`: shrunk to the image keeping
    /// its ratio) by the gravity — for every type, so a `min-width` that overshoots the box is
    /// cut back to it. `crop` cuts first; `extend` pads to the target, `padding` comes last.
    static func imgproxy(
        width sourceWidth: Int, height sourceHeight: Int, vector: Bool = false, operations: ImageOperations
    ) -> GeometryPlan {
        var plan = GeometryPlan(width: sourceWidth, height: sourceHeight)
        plan.flipHorizontal = operations.flipHorizontal
        plan.flipVertical = operations.flipVertical
        var width = Double(sourceWidth), height = Double(sourceHeight)
        if case .size(let cropWidth, let cropHeight, _)? = operations.crop {
            let w =
                cropWidth <= 0
                ? width : cropWidth < 1 ? max(1, (width * cropWidth).rounded()) : min(cropWidth.rounded(.down), width)
            let h =
                cropHeight <= 0
                ? height
                : cropHeight < 1 ? max(1, (height * cropHeight).rounded()) : min(cropHeight.rounded(.down), height)
            plan.manualCrop = Rect(x: Int((width - w) / 2), y: Int((height - h) / 2), width: Int(w), height: Int(h))
            width = w
            height = h
        }
        let boxWidth = Double(operations.width), boxHeight = Double(operations.height)
        let goalWidth = boxWidth > 0 ? boxWidth : width, goalHeight = boxHeight > 0 ? boxHeight : height
        var shrinkX = goalWidth != width ? width / goalWidth : 1
        var shrinkY = goalHeight != height ? height / goalHeight : 1
        var mode = operations.resizeMode
        if shrinkX != 1 || shrinkY != 1 {
            if mode == .auto { mode = (width >= height) == (goalWidth >= goalHeight) ? .fill : .fit }
            if boxWidth == 0 && mode != .force {
                shrinkX = shrinkY
            } else if boxHeight == 0 && mode != .force {
                shrinkY = shrinkX
            } else if mode == .fit {
                (shrinkX, shrinkY) = (max(shrinkX, shrinkY), max(shrinkX, shrinkY))
            } else if mode == .fill || mode == .fillDown || mode == .cover {
                (shrinkX, shrinkY) = (min(shrinkX, shrinkY), min(shrinkX, shrinkY))
            }
        }
        shrinkX /= operations.zoomX
        shrinkY /= operations.zoomY
        var dpr = operations.dpr
        if !operations.enlarge && !vector {
            let least = min(shrinkX, shrinkY)
            if least < 1 {
                shrinkX /= least
                shrinkY /= least
                // The box cannot be reached without enlarging: a dpr below 1 would move further
                // from it (unless `extend` keeps the composition the same at every dpr).
                if !operations.extend { dpr /= least }
            }
            dpr = min(dpr, min(shrinkX, shrinkY))
        }
        if operations.minWidth > 0, width / Double(operations.minWidth) < shrinkX {
            let least = width / Double(operations.minWidth)
            shrinkY /= shrinkX / least
            shrinkX = least
        }
        if operations.minHeight > 0, height / Double(operations.minHeight) < shrinkY {
            let least = height / Double(operations.minHeight)
            shrinkX /= shrinkY / least
            shrinkY = least
        }
        shrinkX = min(shrinkX / dpr, width)
        shrinkY = min(shrinkY / dpr, height)
        let scaleX = 1 / shrinkX, scaleY = 1 / shrinkY
        var scaledWidth = (width * scaleX).rounded(), scaledHeight = (height * scaleY).rounded()
        if scaledWidth != width || scaledHeight != height {
            plan.scaledWidth = Int(scaledWidth)
            plan.scaledHeight = Int(scaledHeight)
        }
        let targetWidth = (boxWidth * dpr * operations.zoomX).rounded()
        let targetHeight = (boxHeight * dpr * operations.zoomY).rounded()
        // The cut to the result (imgproxy's `cropToResult`); 0: that side is not cut.
        var cutWidth = targetWidth, cutHeight = targetHeight
        if operations.resizeMode == .fillDown && !operations.enlarge {
            let overX = targetWidth / scaledWidth, overY = targetHeight / scaledHeight
            if overX > overY && overX > 1 {
                cutHeight = (scaledWidth * targetHeight / targetWidth).rounded()
                cutWidth = scaledWidth
            } else if overY > overX && overY > 1 {
                cutWidth = (scaledHeight * targetWidth / targetHeight).rounded()
                cutHeight = scaledHeight
            }
        }
        if mode == .cover { (cutWidth, cutHeight) = (0, 0) }
        cutWidth = cutWidth > 0 ? min(cutWidth, scaledWidth) : scaledWidth
        cutHeight = cutHeight > 0 ? min(cutHeight, scaledHeight) : scaledHeight
        if cutWidth < scaledWidth || cutHeight < scaledHeight {
            // The cut is a region of the (manually cropped) source, centred until the gravity
            // places it; the region is scaled to exactly the cut's size.
            let regionWidth = min(width, max(1, (cutWidth / scaleX).rounded()))
            let regionHeight = min(height, max(1, (cutHeight / scaleY).rounded()))
            plan.fillCrop = Rect(
                x: Int((width - regionWidth) / 2), y: Int((height - regionHeight) / 2), width: Int(regionWidth),
                height: Int(regionHeight))
            scaledWidth = cutWidth
            scaledHeight = cutHeight
            if regionWidth != cutWidth || regionHeight != cutHeight {
                plan.scaledWidth = Int(cutWidth)
                plan.scaledHeight = Int(cutHeight)
            } else {
                plan.scaledWidth = nil
                plan.scaledHeight = nil
            }
        }
        width = scaledWidth
        height = scaledHeight
        if operations.extend, targetWidth > width || targetHeight > height {
            let canvasWidth = max(width, targetWidth), canvasHeight = max(height, targetHeight)
            plan.canvasWidth = Int(canvasWidth)
            plan.canvasHeight = Int(canvasHeight)
            width = canvasWidth
            height = canvasHeight
        }
        if let padding = operations.padding, padding.count == 4 {
            // imgproxy scales padding by the effective dpr, rounding halves to even.
            let pixels = padding.map { Int((Double($0) * dpr).rounded(.toNearestOrEven)) }
            if pixels.contains(where: { $0 > 0 }) { plan.padding = pixels }
            width += Double(pixels[1] + pixels[3])
            height += Double(pixels[0] + pixels[2])
        }
        plan.rotation = ((operations.rotate % 360 + 360) % 360) / 90
        if plan.rotation % 2 == 1 { swap(&width, &height) }
        plan.outputWidth = Int(width)
        plan.outputHeight = Int(height)
        return plan
    }
}
