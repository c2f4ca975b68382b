import Foundation

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
    /// A rectangle in pixels.
    public struct Rect: Sendable, Hashable {
        /// The origin and size in pixels.
        public var x: Int, y: Int, width: Int, height: Int
        /// A rectangle from its origin and size.
        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

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

    /// - Parameter sourceIsGIF: thumbor runs none of the filters that come after the resize
    ///   (upscale, fill, proportion, rotate, blur …) on a GIF source (its handler skips them
    ///
    /// - Parameters:
    ///   - request: the parsed operations.
    ///   - sourceWidth: the source's width after orientation.
    ///   - sourceHeight: the source's height after orientation.
    ///   unless a gifsicle engine is configured); the plan does the same, so sizes stay equal.
    public init(sourceWidth: Int, sourceHeight: Int, sourceIsGIF: Bool = false, request: ImageRequest) {
        switch request.grammar {
        case .thumbor:
            self = Self.thumbor(
                width: sourceWidth, height: sourceHeight, gif: sourceIsGIF, operations: request.operations)
        case .imgproxy: self = Self.imgproxy(width: sourceWidth, height: sourceHeight, operations: request.operations)
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
        // The request's sides: nil = 0 (derive), `orig` = the source's (thumbor itself fails on
        // `orig` beside a 0; the source's side is what the URL asks for).
        var requestWidth = operations.widthIsOriginal ? Double(sourceWidth) : Double(operations.width)
        var requestHeight = operations.heightIsOriginal ? Double(sourceHeight) : Double(operations.height)
        // no_upscale(): the request clamped to the image (under plain fit-in it changes nothing).
        if !operations.enlarge && operations.resizeMode != .fit {
            requestWidth = min(requestWidth, Double(sourceWidth))
            requestHeight = min(requestHeight, Double(sourceHeight))
        }
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

    /// imgproxy 3's resizing types: the box (× dpr × zoom) meets the image by `fit` (inside),
    /// `fill` (cover, then cropped to the box), `fill-down` (as fill, the box shrunk to the image
    /// keeping its ratio), `force` (each side apart) or `auto` (fill when both are portrait or
    /// both landscape, else fit); no enlarging unless `enlarge`; `extend` pads to the box;
    /// `min-width`/`min-height` raise a fit; `crop` cuts first, padding comes after.
    static func imgproxy(width sourceWidth: Int, height sourceHeight: Int, operations: ImageOperations) -> GeometryPlan
    {
        var plan = GeometryPlan(width: sourceWidth, height: sourceHeight)
        plan.flipHorizontal = operations.flipHorizontal
        plan.flipVertical = operations.flipVertical
        var width = Double(sourceWidth), height = Double(sourceHeight)
        if case .size(let cropWidth, let cropHeight, _)? = operations.crop {
            let w = cropWidth <= 0 ? width : cropWidth < 1 ? (width * cropWidth).rounded() : min(cropWidth, width)
            let h =
                cropHeight <= 0 ? height : cropHeight < 1 ? (height * cropHeight).rounded() : min(cropHeight, height)
            plan.manualCrop = Rect(x: Int((width - w) / 2), y: Int((height - h) / 2), width: Int(w), height: Int(h))
            width = w
            height = h
        }
        let boxWidth = Double(operations.width) * operations.dpr * operations.zoomX
        let boxHeight = Double(operations.height) * operations.dpr * operations.zoomY
        var mode = operations.resizeMode
        if mode == .auto {
            mode = (width >= height) == (boxWidth >= boxHeight) || boxWidth == 0 || boxHeight == 0 ? .fill : .fit
        }
        var scaleX = 1.0, scaleY = 1.0
        let ratioX = boxWidth > 0 ? boxWidth / width : 0, ratioY = boxHeight > 0 ? boxHeight / height : 0
        switch mode {
        case .force:
            scaleX = ratioX > 0 ? ratioX : 1
            scaleY = ratioY > 0 ? ratioY : 1
        case .fill, .fillDown, .cover:
            let scale = max(ratioX, ratioY)
            if scale > 0 { (scaleX, scaleY) = (scale, scale) }
        default:
            let scale = ratioX > 0 && ratioY > 0 ? min(ratioX, ratioY) : max(ratioX, ratioY)
            if scale > 0 { (scaleX, scaleY) = (scale, scale) }
        }
        if operations.minWidth > 0 {
            let floor = Double(operations.minWidth) * operations.dpr / width; scaleX = max(scaleX, floor);
            scaleY = max(scaleY, mode == .force ? scaleY : floor)
        }
        if operations.minHeight > 0 {
            let floor = Double(operations.minHeight) * operations.dpr / height; scaleY = max(scaleY, floor);
            scaleX = max(scaleX, mode == .force ? scaleX : floor)
        }
        if !operations.enlarge {
            scaleX = min(scaleX, 1)
            scaleY = min(scaleY, 1)
        }
        var scaledWidth = max(1, (width * scaleX).rounded()), scaledHeight = max(1, (height * scaleY).rounded())
        if scaledWidth != width || scaledHeight != height {
            plan.scaledWidth = Int(scaledWidth)
            plan.scaledHeight = Int(scaledHeight)
        }
        // fill / fill-down: cut to the box (fill-down: the box shrunk to fit the image, ratio kept).
        if mode == .fill || mode == .fillDown {
            var cutWidth = boxWidth > 0 ? boxWidth.rounded() : scaledWidth
            var cutHeight = boxHeight > 0 ? boxHeight.rounded() : scaledHeight
            if mode == .fillDown, cutWidth > scaledWidth || cutHeight > scaledHeight {
                let shrink = min(scaledWidth / cutWidth, scaledHeight / cutHeight)
                cutWidth = (cutWidth * shrink).rounded()
                cutHeight = (cutHeight * shrink).rounded()
            }
            cutWidth = min(cutWidth, scaledWidth)
            cutHeight = min(cutHeight, scaledHeight)
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
        }
        width = scaledWidth
        height = scaledHeight
        if operations.extend, boxWidth > 0 || boxHeight > 0 {
            let canvasWidth = max(width, boxWidth.rounded()), canvasHeight = max(height, boxHeight.rounded())
            if canvasWidth != width || canvasHeight != height {
                plan.canvasWidth = Int(canvasWidth)
                plan.canvasHeight = Int(canvasHeight)
                width = canvasWidth
                height = canvasHeight
            }
        }
        if let padding = operations.padding, padding.count == 4 {
            width += Double(padding[1] + padding[3]) * operations.dpr
            height += Double(padding[0] + padding[2]) * operations.dpr
        }
        plan.rotation = ((operations.rotate % 360 + 360) % 360) / 90
        if plan.rotation % 2 == 1 { swap(&width, &height) }
        plan.outputWidth = Int(width)
        plan.outputHeight = Int(height)
        return plan
    }
}

extension ImageOperations {
    /// The format of the answer when no `Accept` negotiation applies: the one asked for, except
    /// that an animated GIF stays an animated GIF (as thumbor keeps it); otherwise the source's
    /// when the service writes it, else JPEG (PNG for a source with alpha).
    public func outputFormat(sourceFormat: Format?, isAnimated: Bool, hasAlpha: Bool) -> Format {
        if isAnimated && sourceFormat == .gif { return .gif }
        if let format { return format }
        switch sourceFormat {
        case .jpeg?, .png?, .webp?, .gif?, .avif?: return sourceFormat!
        default: return hasAlpha ? .png : .jpeg
        }
    }
}
