import Foundation
import ImageKit
import Tracing

/// One step of the pipeline: reads what the steps before it left in the context and adds its
/// part. A step is a type in a file of its own under `Pipeline/Steps`.
protocol ProcessingStep: SendableMetatype {
    /// Whether the step has anything to do for this request (a step that does not is skipped,
    /// and makes no span); true unless the step says otherwise.
    static func applies(to context: ProcessingContext) -> Bool
    /// The span a traced request makes for the step (`imagekit.decode` …); nil: none. The steps
    /// that decode, transform or encode have one; one that plans in microseconds would cost a
    /// trace more than it tells.
    static var spanName: String? { get }
    static func run(_ context: inout ProcessingContext) throws(ImageServiceError)
}

extension ProcessingStep {
    static func applies(to context: ProcessingContext) -> Bool { true }
    static var spanName: String? { nil }
}

/// The order a source goes through to become the answer, top to bottom. Adding a step is a
/// file in `Steps/` and a line here; the steps applied to every frame (crop, scale, canvas,
/// turns, filters) are ``FrameStep``s, listed in ``TransformFrames``.
enum ProcessingPipeline {
    static let steps: [any ProcessingStep.Type] = [
        OpenVideo.self,  // a video source: its facts, and its frame stands for the source
        ReadSignature.self,  // what the bytes are; 415 when no image; still output or not
        TrimBorders.self,  // thumbor's trim: decodes, and the trimmed image stands in for the source
        MeasureSource.self,  // the displayed size from the header (422 over the pixel limit)
        PlanGeometry.self,  // crops, scaled size, canvas, turns: GeometryPlan
        PlaceCrop.self,  // the region of the source in the picture (gravity) and its target size
        ScaleOnLoad.self,  // decode at the smallest size that still serves the plan
        PlaceSmartCrop.self,  // the region in decoded pixels; a smart gravity scores them
        DecodeOverlays.self,  // watermark and frame images, once for every frame
        TransformFrames.self,  // every frame: crop, scale, canvas, padding, turns, filters
        ChooseFormat.self,  // the asked format, else the source's (thumbor: a GIF stays a GIF)
        Encode.self,  // the bytes of the answer
    ]

    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        for step in steps where step.applies(to: context) { try step.run(&context) }
    }

    /// ``run(_:)`` with a span, child of `trace`, for each step that applies and has a ``ProcessingStep/spanName``.
    static func run(_ context: inout ProcessingContext, tracing trace: ServiceContext) throws(ImageServiceError) {
        for step in steps where step.applies(to: context) {
            guard let name = step.spanName else {
                try step.run(&context)
                continue
            }
            try ImageKitTracing.span(name, context: trace) { _ throws(ImageServiceError) in try step.run(&context) }
        }
    }
}
