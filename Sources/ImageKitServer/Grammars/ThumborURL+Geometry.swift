import Foundation
import ImageKit

/// thumbor 7.8's transformer, step by step (its half-to-even rounding included), so a plan's
/// sizes equal thumbor's for the same URL: no_upscale clamps the request (after load), then the
/// manual crop, the target size, the fit-in resize or the auto crop and resize, the flips; then
/// the post-transform filters that change the size — here in the order upscale, fill,
/// proportion, rotate (thumbor runs them in URL order; with two of them in another order the
/// plans differ), none for a GIF.
struct ThumborGeometry {
    private let operations: ImageOperations
    private let sourceWidth: Int, sourceHeight: Int
    private var plan: GeometryPlan
    /// The image's size as each step leaves it.
    private var width: Double, height: Double
    /// The request's sides (0: derive) and the target they give.
    private var requestWidth = 0.0, requestHeight = 0.0
    private var targetWidth = 0.0, targetHeight = 0.0
    private var fitIn: Bool { operations.resizeMode == .fit || operations.resizeMode == .cover }

    /// The plan for a source of `width` × `height`; `skipsFilters`: a GIF, after whose resize
    /// thumbor runs no filter.
    static func plan(width: Int, height: Int, skipsFilters: Bool, operations: ImageOperations) -> GeometryPlan {
        var geometry = ThumborGeometry(operations: operations, width: width, height: height)
        geometry.cropManually()
        geometry.readRequest()
        if geometry.fitIn { geometry.fitInside() } else { geometry.cropToShapeAndResize() }
        if !skipsFilters {
            geometry.upscale()
            geometry.fill()
            geometry.proportion()
            geometry.rotate()
        }
        geometry.plan.outputWidth = Int(geometry.width)
        geometry.plan.outputHeight = Int(geometry.height)
        return geometry.plan
    }

    private init(operations: ImageOperations, width: Int, height: Int) {
        self.operations = operations
        (sourceWidth, sourceHeight) = (width, height)
        (self.width, self.height) = (Double(width), Double(height))
        plan = GeometryPlan(width: width, height: height)
        plan.flipHorizontal = operations.flipHorizontal
        plan.flipVertical = operations.flipVertical
    }

    /// The manual crop, clamped to the image; an empty one is ignored.
    private mutating func cropManually() {
        guard case .region(let left, let top, let right, let bottom)? = operations.crop else { return }
        let l = min(max(left, 0), sourceWidth), t = min(max(top, 0), sourceHeight)
        let r = min(max(right, 0), sourceWidth), b = min(max(bottom, 0), sourceHeight)
        guard l < r && t < b else { return }
        plan.manualCrop = PixelRect(x: l, y: t, width: r - l, height: b - t)
        width = Double(r - l)
        height = Double(b - t)
    }

    /// The request's sides — `orig` is the image's once cropped (thumbor crops first and reads
    /// `orig` from what is left) — clamped to the image by no_upscale() (except under plain
    /// fit-in, where it changes nothing), and the target they give.
    private mutating func readRequest() {
        requestWidth = operations.widthIsOriginal ? width : Double(operations.width)
        requestHeight = operations.heightIsOriginal ? height : Double(operations.height)
        if !operations.enlarge && operations.resizeMode != .fit {
            requestWidth = min(requestWidth, Double(sourceWidth))
            requestHeight = min(requestHeight, Double(sourceHeight))
        }
        if requestWidth == 0 && requestHeight == 0 {
            (targetWidth, targetHeight) = (width, height)
        } else {
            targetWidth = requestWidth != 0 ? requestWidth : GeometryPlan.pythonRound(requestHeight * width / height)
            targetHeight = requestHeight != 0 ? requestHeight : GeometryPlan.pythonRound(requestWidth * height / width)
        }
    }

    /// fit-in (full-fit-in: cover): scaled to fit the target (adaptive: the target turned to
    /// the image's orientation); plain fit-in leaves an image that fits as it is.
    private mutating func fitInside() {
        if operations.adaptive
            && ((width < height && targetWidth > targetHeight) || (width > height && targetWidth < targetHeight))
        {
            swap(&targetWidth, &targetHeight)
            swap(&requestWidth, &requestHeight)
        }
        let full = operations.resizeMode == .cover
        guard full || !(targetWidth >= width && targetHeight >= height) else { return }
        let sign = full ? -1.0 : 1.0
        var resizeWidth = targetWidth, resizeHeight = targetHeight
        if width / targetWidth * sign >= height / targetHeight * sign {
            resizeHeight = GeometryPlan.pythonRound(height * targetWidth / width + 1e-5)
        } else {
            resizeWidth = GeometryPlan.pythonRound(width * targetHeight / height + 1e-5)
        }
        requestWidth = max(requestWidth, resizeWidth)
        requestHeight = max(requestHeight, resizeHeight)
        width = Double(Int(resizeWidth))
        height = Double(Int(resizeHeight))
        (plan.scaledWidth, plan.scaledHeight) = (Int(width), Int(height))
    }

    /// A plain size: the target's shape cut out (unless stretched), then scaled to the target.
    private mutating func cropToShapeAndResize() {
        if operations.resizeMode != .force {
            plan.fillCrop = Self.autoCrop(
                width: width, height: height, targetWidth: targetWidth, targetHeight: targetHeight)
            if let crop = plan.fillCrop { (width, height) = (Double(crop.width), Double(crop.height)) }
        }
        guard !(targetWidth == width && targetHeight == height) else { return }
        width = Double(max(1, Int(targetWidth)))
        height = Double(max(1, Int(targetHeight)))
        (plan.scaledWidth, plan.scaledHeight) = (Int(width), Int(height))
    }

    /// upscale(): a fit-in result smaller than the request on both sides grows to it.
    private mutating func upscale() {
        guard operations.enlarge && fitIn && !(width >= requestWidth || height >= requestHeight) else { return }
        if width / requestWidth >= height / requestHeight {
            height = Double(Int(height * requestWidth / width))
            width = requestWidth
        } else {
            width = Double(Int(width * requestHeight / height))
            height = requestHeight
        }
        (plan.scaledWidth, plan.scaledHeight) = (Int(width), Int(height))
    }

    /// fill(): a canvas of the request's size (the image's on a 0 side), the image centred.
    private mutating func fill() {
        guard operations.fill != nil else { return }
        width = requestWidth != 0 ? requestWidth : width
        height = requestHeight != 0 ? requestHeight : height
        (plan.canvasWidth, plan.canvasHeight) = (Int(width), Int(height))
    }

    /// proportion(f): the result scaled by f, for 0 < f ≤ 1 and a result of at least 1×1.
    private mutating func proportion() {
        guard let proportion = operations.proportion, proportion > 0, proportion <= 1, width * proportion >= 1,
            height * proportion >= 1
        else { return }
        plan.finalScale = proportion
        width = Double(Int(width * proportion))
        height = Double(Int(height * proportion))
    }

    /// rotate(): quarter turns.
    private mutating func rotate() {
        plan.rotation = ((operations.rotate % 360 + 360) % 360) / 90
        if plan.rotation % 2 == 1 { swap(&width, &height) }
    }

    /// thumbor's auto crop: the box's shape cut out of the image (ratios compared at two
    /// decimals), centred (the pipeline moves it to the gravity or the smart region); nil when
    /// the shapes already match.
    static func autoCrop(width: Double, height: Double, targetWidth: Double, targetHeight: Double) -> PixelRect? {
        let boxWidth = targetWidth == 0 ? 1 : targetWidth, boxHeight = targetHeight == 0 ? 1 : targetHeight
        func ratio(_ value: Double) -> Double { (value * 100).rounded(.toNearestOrEven) / 100 }
        guard ratio(width / height) != ratio(boxWidth / boxHeight) else { return nil }
        let cropWidth: Double, cropHeight: Double
        if targetWidth / width > targetHeight / height {
            cropWidth = width
            cropHeight = GeometryPlan.pythonRound(width * targetHeight / boxWidth)
        } else {
            cropWidth = GeometryPlan.pythonRound((targetWidth * height / boxHeight).rounded(.up))
            cropHeight = height
        }
        let left = GeometryPlan.pythonRound(min(max((width / 2).rounded(.down) - cropWidth / 2, 0), width - cropWidth))
        let top = GeometryPlan.pythonRound(
            min(max((height / 2).rounded(.down) - cropHeight / 2, 0), height - cropHeight))
        return PixelRect(
            x: Int(left), y: Int(top), width: Int(min(left + cropWidth, width) - left),
            height: Int(min(top + cropHeight, height) - top))
    }
}
