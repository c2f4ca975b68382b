import ImageKit

/// One step applied to each frame after decoding: gets the frame so far and the context (read
/// only), gives the frame back changed. A type in a file of its own under `Pipeline/FrameSteps`.
protocol FrameStep: SendableMetatype {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap
}

/// Every frame through the frame steps, in this order (an animation keeps every frame; a
/// still has one).
enum TransformFrames: ProcessingStep {
    static let spanName: String? = "imagekit.transform"

    static let frameSteps: [any FrameStep.Type] = [
        CropAndScale.self,  // the region, resampled exactly to the plan's size
        Canvas.self,  // thumbor fill() / imgproxy extend: the box, the image centred
        Proportion.self,  // thumbor proportion(): a second scaling
        Padding.self,  // imgproxy padding
        RotateAndFlip.self,  // mirrors, then quarter turns
        ApplyFilters.self,  // the URL's filters in their order
        Flatten.self,  // a background colour under what is left transparent
    ]

    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        let decoded = try context.decodedImage
        let frozen = context
        do {
            context.image = try decoded.mappingFrames { (frame: Bitmap) throws(ImageError) -> Bitmap in
                var frame = frame
                for step in frameSteps { frame = try step.apply(frame, frozen) }
                return frame
            }
        } catch {
            throw ImageServiceError(error)
        }
    }
}
