import Foundation
import ImageKit

/// What the steps of one run of the pipeline share: the source and the request going in, what
/// each step learns or makes on the way (the source's size, the plan, the decoded image, the
/// output format), the answer coming out. Each step reads what the steps before it left and
/// fills in its own part; ``ProcessingPipeline/steps`` lists them in order.
struct ProcessingContext {
    // MARK: Given

    /// The source's bytes.
    let data: Data
    /// The request; a trim replaces its manual crop with the crop in the trimmed image.
    var request: ImageRequest
    /// The bytes of each watermark or frame image, by the URL the filter names.
    let overlayBytes: [String: Data]
    /// The decoders, the pixel limit and the default quality.
    let processor: ImageProcessor

    /// The request's operations.
    var operations: ImageOperations {
        get { request.operations }
        set { request.operations = newValue }
    }

    // MARK: Learnt on the way

    /// The source's signature, read once (by the fetcher, or by the processor when it is called alone).
    var signature = ImageSignature(format: .unknown)
    /// How every decode of the source is made (orientation, limits, first frame only).
    var decoding = ImageDecodingOptions.default
    /// A video source (MP4, MOV, WebM, MKV with the `Video` trait): its frame at the request's
    /// time is what every decode of the source gives.
    var video: VideoFrameSource?
    /// A GIF under rules that skip its filters: it stays a GIF, untouched by filters.
    var keepsGIF = false
    /// The output is a still format: an animated source answers its first frame.
    var stillOutput = false
    /// The source's displayed size (orientation applied; after a trim, the trimmed size).
    var sourceSize = PixelSize(width: 0, height: 0)
    /// A decode made before planning (trim, a header that could not be read, a GIF), reused.
    var earlyDecode: DecodedImage?
    /// The answer keeps every frame.
    var animated = false
    /// An SVG or PDF source: drawn at the size the plan needs.
    var isVector = false
    /// Where every output pixel comes from.
    var plan = GeometryPlan(width: 0, height: 0)
    /// The part of the source (in source pixels) that ends up in the picture.
    var region = PixelRect(x: 0, y: 0, width: 0, height: 0)
    /// Where a fill crop may move: the manual crop, or the whole source.
    var cropBounds = PixelRect(x: 0, y: 0, width: 0, height: 0)
    /// The size `region` is scaled to.
    var targetSize = PixelSize(width: 0, height: 0)
    /// The decoded source, at the smallest size that serves the plan.
    var decoded: DecodedImage?
    /// `region` in the decoded image's pixels.
    var decodedRegion = PixelRect(x: 0, y: 0, width: 0, height: 0)
    /// Watermark and frame images, decoded once for every frame.
    var overlays: [String: Bitmap] = [:]
    /// The finished pixels.
    var image: DecodedImage?
    /// The format the answer is written in.
    var outputFormat = ImageOperations.Format.jpeg
    /// `best` is asked: the encoder tries the request's candidates and keeps the smallest.
    var triesBestFormat = false

    // MARK: Made

    /// The encoded answer.
    var result: ProcessedImage?
    /// Decoding time so far.
    var decodeTime = Duration.zero
    /// Encoding time so far.
    var encodeTime = Duration.zero

    init(data: Data, request: ImageRequest, overlayBytes: [String: Data], processor: ImageProcessor) {
        self.data = data
        self.request = request
        self.overlayBytes = overlayBytes
        self.processor = processor
    }

    /// Decodes the source with `options`, adding the time to ``decodeTime``.
    mutating func decode(_ options: ImageDecodingOptions) throws(ImageServiceError) -> DecodedImage {
        let start = ContinuousClock.now
        defer { decodeTime += ContinuousClock.now - start }
        if let video { return try decodeVideo(video, options) }
        do {
            return try processor.coders.decode(data, options: options)
        } catch {
            throw ImageServiceError(error)
        }
    }

    /// The image the steps after ``ScaleOnLoad`` work on.
    var decodedImage: DecodedImage {
        get throws(ImageServiceError) {
            guard let decoded else { throw ImageServiceError(.processingFailed, "a step needs pixels before decoding") }
            return decoded
        }
    }
}
