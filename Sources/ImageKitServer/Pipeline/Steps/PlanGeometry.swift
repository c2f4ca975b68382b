import ImageKit

/// The plan (``GeometryPlan``): crops, scaled size, canvas, padding and turns, from the
/// source's displayed size and the operations alone.
enum PlanGeometry: ProcessingStep {
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        context.plan = GeometryPlan(
            sourceWidth: context.sourceSize.width, sourceHeight: context.sourceSize.height,
            sourceIsGIF: context.keepsGIF, sourceIsVector: context.isVector, request: context.request)
    }
}
