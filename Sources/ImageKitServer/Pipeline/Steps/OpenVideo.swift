import ImageKit

/// A video source (MP4, MOV, WebM, MKV in a build with the `Video` trait): opened once, before
/// anything else reads the bytes. Its upright size is the source's size, and every decode of the
/// source gives its frame at the request's time (``ImageOperations/videoTime``, else the
/// processor's default), scaled in the conversion to what the plan needs; the rest of the pipeline
/// treats that frame as any still image. Bytes that only look like a container answer 415.
enum OpenVideo: ProcessingStep {
    static let spanName: String? = "imagekit.video.open"

    static func applies(to context: ProcessingContext) -> Bool { context.signature.format == .unknown }

    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        context.video = try context.processor.openVideo(context.data, signature: context.signature)
    }
}
