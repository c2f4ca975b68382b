import Foundation

/// How urgent a load is; higher-priority requests leave the queue first.
public enum ImageLoadPriority: Int, Sendable, Comparable, CaseIterable {
    case low = 0
    case normal = 1
    case high = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A request for the bytes of one image.
public struct ImageLoadRequest: Sendable, Hashable {
    public var url: URL
    public var priority: ImageLoadPriority
    /// Extra request headers (override the loader's own).
    public var headers: [String: String]
    /// Validators from a cached copy: the request becomes conditional, and an unchanged
    /// resource comes back as ``ImageLoadResponse/isNotModified`` without a body.
    public var cachedValidators: HTTPCacheHeaders?
    /// Accept any TLS certificate for this request (nil: the loader's setting).
    public var allowsInvalidSSLCertificates: Bool?
    /// Turn the cookie engine on for this request (nil: the loader's setting).
    public var handlesCookies: Bool?

    public init(url: URL, priority: ImageLoadPriority = .normal, headers: [String: String] = [:],
                cachedValidators: HTTPCacheHeaders? = nil, allowsInvalidSSLCertificates: Bool? = nil,
                handlesCookies: Bool? = nil) {
        self.url = url
        self.priority = priority
        self.headers = headers
        self.cachedValidators = cachedValidators
        self.allowsInvalidSSLCertificates = allowsInvalidSSLCertificates
        self.handlesCookies = handlesCookies
    }
}

/// Bytes received so far and, when the server said, how many to expect.
public struct ImageLoadProgress: Sendable, Hashable {
    public var receivedBytes: Int64
    /// nil when the length is unknown (chunked transfer, no Content-Length).
    public var expectedBytes: Int64?

    public init(receivedBytes: Int64, expectedBytes: Int64?) {
        self.receivedBytes = receivedBytes
        self.expectedBytes = expectedBytes
    }

    public var fractionCompleted: Double? {
        guard let expectedBytes, expectedBytes > 0 else { return nil }
        return min(1, Double(receivedBytes) / Double(expectedBytes))
    }
}

/// Timings and facts of one transfer, from curl.
public struct TransferMetrics: Sendable, Hashable {
    public var nameLookup: TimeInterval = 0
    public var connect: TimeInterval = 0
    public var tlsHandshake: TimeInterval = 0
    public var timeToFirstByte: TimeInterval = 0
    public var total: TimeInterval = 0
    public var bytesReceived: Int64 = 0
    /// "1.1", "2", "3", or "" when unknown (a file or data URL).
    public var httpVersion: String = ""
    /// Whether an existing connection was reused.
    public var reusedConnection = false

    public init() {}
}

/// The outcome of a successful load.
public struct ImageLoadResponse: Sendable {
    public var url: URL
    /// The body (empty for a 304 Not Modified).
    public var data: Data
    /// The HTTP status, or 200 for file and data URLs.
    public var statusCode: Int
    /// All response headers, names lowercased.
    public var headers: [String: String]
    /// True when the server answered 304 to the request's validators: the cached copy is
    /// still good, and only its metadata needs refreshing.
    public var isNotModified: Bool
    public var metrics: TransferMetrics

    public init(url: URL, data: Data, statusCode: Int = 200, headers: [String: String] = [:],
                isNotModified: Bool = false, metrics: TransferMetrics = TransferMetrics()) {
        self.url = url
        self.data = data
        self.statusCode = statusCode
        self.headers = headers
        self.isNotModified = isNotModified
        self.metrics = metrics
    }

    /// The headers the disk cache keeps with the entry.
    public var cacheHeaders: HTTPCacheHeaders {
        HTTPCacheHeaders(etag: headers["etag"], lastModified: headers["last-modified"], cacheControl: headers["cache-control"],
                         expires: headers["expires"], date: headers["date"], contentType: headers["content-type"])
    }
}

/// A handle on one caller's interest in a load.
public protocol ImageLoadCancellable: Sendable {
    /// Detaches this caller: its completion reports ``ImageError/Code/cancelled`` (once). The
    /// transfer itself stops when no caller is left.
    func cancel()
    /// The bytes received so far, for progressive decoding; nil when the loader cannot tell
    /// (the default) or nothing has arrived.
    func receivedData() -> Data?
}

extension ImageLoadCancellable {
    public func receivedData() -> Data? { nil }
}

/// Something that fetches image bytes for URLs (SDWebImage's `SDImageLoader`).
public protocol ImageLoading: Sendable {
    func canLoad(_ url: URL) -> Bool
    /// Starts loading. `progress` is called with monotonic byte counts; `completion` exactly
    /// once, with the response or an ``ImageError``.
    @discardableResult
    func load(_ request: ImageLoadRequest,
              progress: (@Sendable (ImageLoadProgress) -> Void)?,
              completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void) -> any ImageLoadCancellable
}

extension ImageLoading {
    /// Async form; cancelling the task cancels this caller's interest.
    public func load(_ request: ImageLoadRequest,
                     progress: (@Sendable (ImageLoadProgress) -> Void)? = nil) async throws(ImageError) -> ImageLoadResponse {
        try await awaitingLoad { completion in load(request, progress: progress, completion: completion) }.get()
    }

    /// Loads `url` with default request settings.
    public func load(_ url: URL) async throws(ImageError) -> ImageLoadResponse {
        try await load(ImageLoadRequest(url: url))
    }
}

/// Runs a callback-style load as an async call: `start` begins it with the completion to call
/// exactly once; cancelling the task cancels the returned handle.
func awaitingLoad(
    _ start: (@escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void) -> any ImageLoadCancellable
) async -> Result<ImageLoadResponse, ImageError> {
    let handle = Locked<(any ImageLoadCancellable)?>(nil)
    return await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            let started = start { continuation.resume(returning: $0) }
            handle.withLock { $0 = started }
            if Task.isCancelled { started.cancel() }
        }
    } onCancel: {
        handle.withLock { $0 }?.cancel()
    }
}
