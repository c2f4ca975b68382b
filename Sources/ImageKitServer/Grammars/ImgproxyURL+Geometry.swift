import Foundation
import ImageKit

/// imgproxy's geometry, step by step as its `calcScale`, `calcSizes` and `cropToResult` take it:
/// a shrink factor per side from the box (`fit`: the larger, `fill`/`fill-down`: the smaller,
/// `force`: each apart, `auto`: fill when the image and the box are both portrait or both
/// landscape, else fit; a missing side follows the other), divided by `zoom`; without `enlarge`
/// no side grows (and `dpr` is lowered to what the source allows); `min-width` / `min-height`
/// lower the shrink until the side reaches them; then the scaled image is cut to the target
/// (box × the effective dpr × zoom, `fill-down`: shrunk to the image keeping its ratio) by the
/// gravity — for every type, so a `min-width` that overshoots the box is cut back to it. `crop`
/// cuts first; `extend` pads to the target, `padding` comes last.
struct ImgproxyGeometry {
    private let operations: ImageOperations
    private var plan: GeometryPlan
    /// The image's size as each step leaves it.
    private var width: Double, height: Double
    /// The box asked for (0: that side follows the other).
    private var boxWidth: Double { Double(operations.width) }
    private var boxHeight: Double { Double(operations.height) }
    /// Source pixels per output pixel on each side, and its inverse once final.
    private var shrinkX = 1.0, shrinkY = 1.0
    private var scaleX = 1.0, scaleY = 1.0
    /// The resizing type once `auto` is decided.
    private var mode: ImageOperations.ResizeMode
    private var dpr: Double
    /// The scaled size, the target, and the cut to the result (0: that side is not cut).
    private var scaledWidth = 0.0, scaledHeight = 0.0
    private var targetWidth = 0.0, targetHeight = 0.0

    /// The plan for a source of `width` × `height`; `growsVector`: a vector source, which
    /// grows to the box without `enlarge`.
    static func plan(width: Int, height: Int, growsVector: Bool, operations: ImageOperations) -> GeometryPlan {
        var geometry = ImgproxyGeometry(operations: operations, width: width, height: height)
        geometry.crop()
        geometry.shrinkToBox()
        if !operations.enlarge && !growsVector { geometry.neverEnlarge() }
        geometry.reachMinimumSizes()
        geometry.scale()
        geometry.cutToResult()
        geometry.extendAndPad()
        geometry.plan.rotation = ((operations.rotate % 360 + 360) % 360) / 90
        if geometry.plan.rotation % 2 == 1 { swap(&geometry.width, &geometry.height) }
        geometry.plan.outputWidth = Int(geometry.width)
        geometry.plan.outputHeight = Int(geometry.height)
        return geometry.plan
    }

    private init(operations: ImageOperations, width: Int, height: Int) {
        self.operations = operations
        (self.width, self.height) = (Double(width), Double(height))
        mode = operations.resizeMode
        dpr = operations.dpr
        plan = GeometryPlan(width: width, height: height)
        plan.flipHorizontal = operations.flipHorizontal
        plan.flipVertical = operations.flipVertical
    }

    /// `crop:W:H`: a centred region (a side ≤ 0: all of it; below 1: a fraction).
    private mutating func crop() {
        guard case .size(let cropWidth, let cropHeight, _)? = operations.crop else { return }
        func side(_ asked: Double, of whole: Double) -> Double {
            asked <= 0 ? whole : asked < 1 ? max(1, (whole * asked).rounded()) : min(asked.rounded(.down), whole)
        }
        let w = side(cropWidth, of: width), h = side(cropHeight, of: height)
        plan.manualCrop = PixelRect(x: Int((width - w) / 2), y: Int((height - h) / 2), width: Int(w), height: Int(h))
        (width, height) = (w, h)
    }

    /// The shrink factors the resizing type gives, divided by `zoom`.
    private mutating func shrinkToBox() {
        let goalWidth = boxWidth > 0 ? boxWidth : width, goalHeight = boxHeight > 0 ? boxHeight : height
        shrinkX = goalWidth != width ? width / goalWidth : 1
        shrinkY = goalHeight != height ? height / goalHeight : 1
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
    }

    /// Without `enlarge`, no side grows, and `dpr` is lowered to what the source allows.
    private mutating func neverEnlarge() {
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

    /// `min-width` / `min-height`: the shrink lowered until the side reaches them.
    private mutating func reachMinimumSizes() {
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
    }

    /// The scaled size (with the dpr), and the target: the box × the effective dpr × zoom.
    private mutating func scale() {
        shrinkX = min(shrinkX / dpr, width)
        shrinkY = min(shrinkY / dpr, height)
        (scaleX, scaleY) = (1 / shrinkX, 1 / shrinkY)
        scaledWidth = (width * scaleX).rounded()
        scaledHeight = (height * scaleY).rounded()
        if scaledWidth != width || scaledHeight != height {
            (plan.scaledWidth, plan.scaledHeight) = (Int(scaledWidth), Int(scaledHeight))
        }
        targetWidth = (boxWidth * dpr * operations.zoomX).rounded()
        targetHeight = (boxHeight * dpr * operations.zoomY).rounded()
    }

    /// imgproxy's `cropToResult`: the scaled image cut to the target (`fill-down` without
    /// `enlarge`: the target shrunk to the image keeping its ratio; `cover`: not cut).
    private mutating func cutToResult() {
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
            plan.fillCrop = PixelRect(
                x: Int((width - regionWidth) / 2), y: Int((height - regionHeight) / 2), width: Int(regionWidth),
                height: Int(regionHeight))
            (scaledWidth, scaledHeight) = (cutWidth, cutHeight)
            let scales = regionWidth != cutWidth || regionHeight != cutHeight
            (plan.scaledWidth, plan.scaledHeight) = scales ? (Int(cutWidth), Int(cutHeight)) : (nil, nil)
        }
        (width, height) = (scaledWidth, scaledHeight)
    }

    /// `extend`: a canvas of the target; `padding`, scaled by the effective dpr, around it.
    private mutating func extendAndPad() {
        if operations.extend, targetWidth > width || targetHeight > height {
            width = max(width, targetWidth)
            height = max(height, targetHeight)
            (plan.canvasWidth, plan.canvasHeight) = (Int(width), Int(height))
        }
        guard let padding = operations.padding, padding.count == 4 else { return }
        // imgproxy scales padding by the effective dpr, rounding halves to even.
        let pixels = padding.map { Int((Double($0) * dpr).rounded(.toNearestOrEven)) }
        if pixels.contains(where: { $0 > 0 }) { plan.padding = pixels }
        width += Double(pixels[1] + pixels[3])
        height += Double(pixels[0] + pixels[2])
    }
}
