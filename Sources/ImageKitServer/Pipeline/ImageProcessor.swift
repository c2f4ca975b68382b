import Foundation
import ImageKit
import Tracing

/// An encoded result of the pipeline.
public struct ProcessedImage: Sendable {
    /// The encoded answer.
    public var data: Data
    /// Its format.
    public var format: ImageOperations.Format
    /// Its width in pixels (0 when read back from a result cache entry written before sizes were kept).
    public var width: Int
    /// Its height in pixels (see ``width``).
    public var height: Int
    /// Its frames (an animation keeps all of them).
    public var frameCount: Int
    /// The quality autoquality chose (nil: a fixed quality).
    public var autoQuality: AutoQualityChoice? = nil
    /// Where the time went (zero when read back from the result cache).
    public var timings = ProcessingTimings()
}

/// The CPU stages of one ``ImageProcessor/process(_:request:watermarks:signature:serviceContext:)``, for the service's stage metrics.
public struct ProcessingTimings: Sendable {
    /// Decoding, including decode-time scaling.
    public var decode: Duration = .zero
    /// Everything between decode and encode: crop, resample, canvas, turns, filters.
    public var transform: Duration = .zero
    /// Encoding.
    public var encode: Duration = .zero

    /// All zero.
    public init() {}

    /// The three stages' durations.
    public init(decode: Duration, transform: Duration, encode: Duration) {
        self.decode = decode
        self.transform = transform
        self.encode = encode
    }
}

/// Turns a source's bytes and a request into the answer's bytes: probe the header, plan the
/// geometry (``GeometryPlan``), decode at the smallest size that still serves the plan (a
/// decode-time thumbnail: DCT scaling for JPEG, scaled WebP decodes …), crop, resample exactly to
/// the plan, canvas, turns and filters, then encode — each a step of its own (`Pipeline/Steps`,
/// in the order `ProcessingPipeline` lists). Synchronous and CPU-bound: the service runs it on
/// its worker pool.
///
/// ```swift
/// let request = try ImageRequest.parse(path: "/unsafe/fit-in/256x256/example.com/cat.jpg")
/// let result = try ImageProcessor().process(sourceBytes, request: request)
/// result.format   // .jpeg
/// ```
public struct ImageProcessor: Sendable {
    /// The decoders and encoders used.
    public var coders: ImageCodersManager
    /// Pixels a source may have (decompression bombs beyond): 50 M, imgproxy's default.
    public var maxPixels: Int
    /// The quality when none is asked (thumbor's 80).
    public var defaultQuality: Int
    /// Where a video source's frame is taken when the request does not say, in seconds (1,
    /// imgproxy's `IMGPROXY_VIDEO_THUMBNAIL_SECOND`).
    public var videoThumbnailSecond: Double
    /// The most frames one video request may decode to reach its frame (from the key frame
    /// before it); more answers 422.
    public var maxVideoFrames: Int
    /// The most frames one sprite sheet or animation of a video may take (imgproxy `vtt`, `vta`):
    /// 256, a 16 × 16 sheet; more answers 422. A preview's frames together stay within
    /// ``maxPixels`` too.
    public var maxVideoStills: Int
    /// The most frames a video answered as video may have (`@mp4` or thumbor's `format(webm)` on
    /// a video source): 1,800, a minute at 30 fps; more answers 422. All its frames together stay
    /// within ``maxPixels`` too.
    public var maxVideoOutputFrames: Int
    /// How long the frames of one sheet, preview or video answered as video may take to decode
    /// (20 s); past it the request answers 422. Each frame is bounded by ``maxVideoFrames``.
    public var videoDeadline: Duration = .seconds(20)
    /// The quality chosen per image for URLs that do not fix one (off by default).
    public var autoQuality = AutoQualityDefaults()

    /// A processor; every parameter has the default documented on its property.
    public init(
        coders: ImageCodersManager = .shared, maxPixels: Int = 50_000_000, defaultQuality: Int = 80,
        videoThumbnailSecond: Double = 1, maxVideoFrames: Int = 1_000, maxVideoStills: Int = 256,
        maxVideoOutputFrames: Int = 1_800
    ) {
        self.coders = coders
        self.maxPixels = maxPixels
        self.defaultQuality = defaultQuality
        self.videoThumbnailSecond = videoThumbnailSecond
        self.maxVideoFrames = maxVideoFrames
        self.maxVideoStills = maxVideoStills
        self.maxVideoOutputFrames = maxVideoOutputFrames
    }

    /// The answer for `request` from the source's bytes, through the pipeline's steps in order.
    ///
    /// - Parameters:
    ///   - data: the source image's bytes.
    ///   - request: the request, its format already negotiated with `Accept` where that applies.
    ///   - watermarks: the bytes of each `watermark()` and `frame()` filter's image, by the URL
    ///     the filter names (the service fetches them through the same rules as the source).
    ///   - signature: the source's signature when the caller sniffed it already; nil: read here.
    ///   - serviceContext: the trace to make the steps' spans in (`imagekit.decode`,
    ///     `imagekit.transform`, `imagekit.encode` …); nil: none made.
    /// - Throws: ``ImageServiceError``: 415 for bytes that are no image or video this build reads,
    ///   422 for a source over ``maxPixels`` (or a video frame over ``maxVideoFrames`` decodes away),
    ///   400 for a bad argument, 500 otherwise.
    public func process(
        _ data: Data, request: ImageRequest, watermarks: [String: Data] = [:], signature: ImageSignature? = nil,
        serviceContext: ServiceContext? = nil
    ) throws(ImageServiceError) -> ProcessedImage {
        let start = ContinuousClock.now
        var context = ProcessingContext(data: data, request: request, overlayBytes: watermarks, processor: self)
        context.signature = signature ?? ImageSignature(data)
        if let serviceContext {
            try ProcessingPipeline.run(&context, tracing: serviceContext)
        } else {
            try ProcessingPipeline.run(&context)
        }
        guard var result = context.result else {
            throw ImageServiceError(.processingFailed, "the pipeline ended without an answer")
        }
        let total = ContinuousClock.now - start
        result.timings = ProcessingTimings(
            decode: context.decodeTime, transform: max(.zero, total - context.decodeTime - context.encodeTime),
            encode: context.encodeTime)
        return result
    }

    /// The source opened as a video, when its bytes are no image but look like a video container
    /// and this build reads video (the `Video` trait); nil otherwise. Within ``maxPixels`` and
    /// ``maxVideoFrames``; 415 for bytes no allowed demuxer reads, 422 over a limit.
    func openVideo(_ data: Data, signature: ImageSignature) throws(ImageServiceError) -> VideoFrameSource? {
        guard signature.format == .unknown, VideoFrameSource.isSupported, VideoFrameSource.mayBeVideo(data) else {
            return nil
        }
        do {
            return try VideoFrameSource(
                data: data, limits: .init(maxPixels: maxPixels, maxDecodedFrames: maxVideoFrames))
        } catch {
            throw ImageServiceError(error)
        }
    }
}
