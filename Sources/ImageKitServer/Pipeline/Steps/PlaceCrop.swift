import ImageKit

/// The region of the source that ends up in the picture — the manual crop, then the fill crop
/// moved to the gravity inside it — and the size it is scaled to. A smart gravity's window is
/// placed later, on the decoded pixels (``PlaceSmartCrop``).
enum PlaceCrop: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        let plan = context.plan
        var region = PixelRect(x: 0, y: 0, width: context.sourceSize.width, height: context.sourceSize.height)
        if let crop = plan.manualCrop { region = crop }
        context.cropBounds = region
        if var fill = plan.fillCrop {
            place(
                &fill, in: region.width, region.height, gravity: context.operations.gravity, manualCrop: plan.manualCrop
            )
            region = PixelRect(x: region.x + fill.x, y: region.y + fill.y, width: fill.width, height: fill.height)
        }
        context.region = region
        context.targetSize = PixelSize(
            width: plan.scaledWidth ?? region.width, height: plan.scaledHeight ?? region.height)
    }

    /// Moves a fill crop to the gravity (thumbor: the alignment's focal point, floor-averaged;
    /// a focal region's centre; smart: the centre, as thumbor without detectors).
    static func place(
        _ crop: inout PixelRect, in width: Int, _ height: Int, gravity: ImageOperations.Gravity,
        manualCrop: PixelRect?
    ) {
        var focusX: Double?, focusY: Double?
        switch gravity {
        case .west, .northWest, .southWest: focusX = 0
        case .east, .northEast, .southEast: focusX = Double(width)
        default: break
        }
        switch gravity {
        case .north, .northWest, .northEast: focusY = 0
        case .south, .southWest, .southEast: focusY = Double(height)
        default: break
        }
        if case .focalPoint(let x, let y) = gravity {
            focusX = x * Double(width)
            focusY = y * Double(height)
        }
        if case .focalRegion(let left, let top, let right, let bottom) = gravity {
            focusX = Double(left + right) / 2 - Double(manualCrop?.x ?? 0)
            focusY = Double(top + bottom) / 2 - Double(manualCrop?.y ?? 0)
        }
        if let focusX {
            crop.x = Int(
                GeometryPlan.pythonRound(
                    min(max(focusX.rounded(.down) - Double(crop.width) / 2, 0), Double(width - crop.width))))
        }
        if let focusY {
            crop.y = Int(
                GeometryPlan.pythonRound(
                    min(max(focusY.rounded(.down) - Double(crop.height) / 2, 0), Double(height - crop.height))))
        }
    }
}
