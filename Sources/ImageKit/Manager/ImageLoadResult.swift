import Foundation

// Spec: MGR-22.
/// What a load delivers (SDWebImage's completion arguments, as one value).
public struct ImageLoadResult: Sendable {
    /// The decoded (and transformed) image. nil only when no image is the right answer: a
    /// ``ImageLoadOptions/fromCacheOnly`` miss, a download the manager's `shouldDownload`
    /// vetoed, a transformer that declined, or ``ImageLoadOptions/avoidDecodeImage`` (then
    /// ``data`` holds the bytes) — never for a failure, which is an ``ImageError``.
    public var image: DecodedImage?
    /// The original encoded bytes: from the network or the disk; from memory hits only with
    /// ``ImageLoadOptions/queryMemoryData``.
    public var data: Data?
    /// Where the image came from: `.memory`, `.disk`, or `.none` for the loader.
    public var cacheType: ImageCacheType
    /// The URL that was loaded.
    public var url: URL
    /// The key the image is cached under (with transformer, thumbnail and decode suffixes).
    public var cacheKey: CacheKey
    /// The HTTP status of a network load; nil from a cache.
    public var statusCode: Int? {
        get { details?.value.statusCode }
        set { updateDetails { $0.statusCode = newValue } }
    }
    /// Transfer timings of a network load; nil from a cache.
    public var metrics: TransferMetrics? {
        get { details?.value.metrics }
        set { updateDetails { $0.metrics = newValue } }
    }
    /// The format of the image (or, without one, of ``data``).
    public var format: ImageFormat
    /// A store that failed (a full or read-only disk). The image is delivered all the same;
    /// reported here only with ``ImageLoadOptions/waitStoreCache`` (always to the manager's
    /// ``ImageManagerConfiguration/storeErrorHandler``).
    public var storeError: ImageError? {
        get { details?.value.storeError }
        set { updateDetails { $0.storeError = newValue } }
    }
    /// The URL the bytes came from after redirects, for a network load; nil from a cache.
    public var finalURL: URL? {
        get { details?.value.finalURL }
        set { updateDetails { $0.finalURL = newValue } }
    }
    /// How long each stage of the load took (Nuke's task metrics); empty for a memory hit.
    public var timings: ImageLoadTimings {
        get { details?.value.timings ?? ImageLoadTimings() }
        set { updateDetails { $0.timings = newValue } }
    }

    /// The caching headers the bytes came with (`ETag`, `Last-Modified`, `Cache-Control` …): the
    /// response's for a network load, the stored entry's for a disk hit; nil from memory. An
    /// image service passes `Last-Modified` on from them.
    public var httpHeaders: HTTPCacheHeaders? {
        get { details?.value.httpHeaders }
        set { updateDetails { $0.httpHeaders = newValue } }
    }

    /// What a memory hit leaves empty, behind one reference: a hit neither fills nor copies it
    /// (each copy of a result retains one pointer instead of a dozen fields).
    private var details: DetailsBox?

    private struct Details: Sendable {
        var statusCode: Int?
        var metrics: TransferMetrics?
        var storeError: ImageError?
        var finalURL: URL?
        var timings: ImageLoadTimings?
        var httpHeaders: HTTPCacheHeaders?
    }

    private final class DetailsBox: Sendable {
        let value: Details
        init(_ value: Details) { self.value = value }
    }

    private mutating func updateDetails(_ change: (inout Details) -> Void) {
        var value = details?.value ?? Details()
        change(&value)
        details = DetailsBox(value)
    }

    /// A result; the manager makes these.
    public init(
        image: DecodedImage?, data: Data?, cacheType: ImageCacheType, url: URL, cacheKey: CacheKey,
        statusCode: Int? = nil, metrics: TransferMetrics? = nil, format: ImageFormat? = nil,
        storeError: ImageError? = nil
    ) {
        self.image = image
        self.data = data
        self.cacheType = cacheType
        self.url = url
        self.cacheKey = cacheKey
        self.format = format ?? image?.format ?? data.map { ImageSignature($0).format } ?? .unknown
        if statusCode != nil || metrics != nil || storeError != nil {
            details = DetailsBox(Details(statusCode: statusCode, metrics: metrics, storeError: storeError))
        }
    }
}

/// One step of a load seen through ``ImageManager/imageEvents(for:options:context:)``.
public enum ImageLoadEvent: Sendable {
    /// Bytes received so far (network loads only).
    case progress(ImageLoadProgress)
    /// A partial image while the bytes arrive (``ImageLoadOptions/progressiveLoad``): at most
    /// one per 0.1 s, only when something new can be shown, never cached.
    case preview(DecodedImage)
    /// A finished image. With ``ImageLoadOptions/refreshCached`` the cached image comes first,
    /// and a second `.result` follows when the server has new bytes.
    case result(ImageLoadResult)
    /// The server answered a revalidation with 304: the cached image delivered before is
    /// current (its entry's metadata was refreshed). Nothing else follows.
    case notModified(TransferMetrics)
}

/// How long each stage of one load took, in seconds; nil for a stage the load did not run.
/// A load joined to another's work reports that work's timings.
public struct ImageLoadTimings: Sendable, Hashable {
    /// Looking in the caches (memory again, then disk: reading and, for a hit, decoding).
    public var cacheQuery: TimeInterval?
    /// The loader, from the request to the last byte (retries included).
    public var download: TimeInterval?
    /// Waiting for a decode thread.
    public var queueWait: TimeInterval?
    /// Decoding the bytes.
    public var decode: TimeInterval?
    /// Running the transformer.
    public var transform: TimeInterval?
    /// Storing: the memory write, and the disk write with ``ImageLoadOptions/waitStoreCache``.
    public var store: TimeInterval?
    /// From the start of the shared work to the result.
    public var total: TimeInterval?

    /// No stage timed yet.
    public init() {}
}
