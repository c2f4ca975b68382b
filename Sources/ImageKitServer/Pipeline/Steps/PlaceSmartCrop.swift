import ImageKit

/// The region in the decoded image's pixels (the decode may be smaller than the source). A
/// smart gravity's fill window gets its place from the pixels here, scored on the decode-time
/// thumbnail (``SmartCrop``) within the manual crop; animations keep the centred window.
enum PlaceSmartCrop: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        let decoded = try context.decodedImage
        let source = context.sourceSize
        let factorX = Double(decoded.width) / Double(source.width)
        let factorY = Double(decoded.height) / Double(source.height)
        func scaled(_ rect: PixelRect, atLeastOne: Bool) -> PixelRect {
            let minimum = atLeastOne ? 1 : 0
            return PixelRect(
                x: Int((Double(rect.x) * factorX).rounded()), y: Int((Double(rect.y) * factorY).rounded()),
                width: max(minimum, Int((Double(rect.width) * factorX).rounded())),
                height: max(minimum, Int((Double(rect.height) * factorY).rounded())))
        }
        context.decodedRegion = scaled(context.region, atLeastOne: true)
        guard context.operations.gravity == .smart, context.plan.fillCrop != nil, !context.animated else { return }
        let bounds = scaled(context.cropBounds, atLeastOne: false)
            .intersection(PixelRect(x: 0, y: 0, width: decoded.width, height: decoded.height))
        guard !bounds.isEmpty else { return }
        context.decodedRegion = SmartCrop.window(
            of: (context.decodedRegion.width, context.decodedRegion.height), within: bounds,
            in: decoded.frames[0].bitmap)
    }
}
