import Foundation

/// How urgent a load is; higher-priority requests leave the queue first.
public enum ImageLoadPriority: Int, Sendable, Comparable, CaseIterable {
    /// Prefetches and work that can wait.
    case low = 0
    /// The default.
    case normal = 1
    /// Images the user is waiting for.
    case high = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A request for the bytes of one image.
///
/// Equality and hashing compare the request's data (URL, priority, headers, validators, TLS,
/// cookie and retry settings), not its ``hooks``: closures cannot be compared.
public struct ImageLoadRequest: Sendable, Hashable {
    /// The URL to load.
    public var url: URL
    /// The transfer's priority among waiting transfers.
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
    /// How transient failures of this request are retried (nil: the loader's setting).
    public var retryPolicy: ImageRetryPolicy?
    // Spec: CTX-09, CTX-10.
    /// This request's own hooks; each one set wins over the loader's.
    public var hooks: ImageLoadHooks
    /// Hand the body to `progress` as it arrives, in ``ImageLoadProgress/newBytes``, for a caller
    /// that decodes while it downloads (progressive previews, a thumbnail that needs only the
    /// first scans). Default false: the bytes come only with the response. A request with a
    /// ``ImageLoadHooks/decryptor`` gets none (its bytes are not the image until decrypted),
    /// and a transfer whose bytes were handed out is not retried (a caller would see the start
    /// of the image twice).
    public var deliversReceivedBytes = false

    /// A request; only `url` is required.
    public init(
        url: URL, priority: ImageLoadPriority = .normal, headers: [String: String] = [:],
        cachedValidators: HTTPCacheHeaders? = nil, allowsInvalidSSLCertificates: Bool? = nil,
        handlesCookies: Bool? = nil, retryPolicy: ImageRetryPolicy? = nil, hooks: ImageLoadHooks = ImageLoadHooks()
    ) {
        self.url = url
        self.priority = priority
        self.headers = headers
        self.cachedValidators = cachedValidators
        self.allowsInvalidSSLCertificates = allowsInvalidSSLCertificates
        self.handlesCookies = handlesCookies
        self.retryPolicy = retryPolicy
        self.hooks = hooks
    }

    /// Compares the request's data; hooks are not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.url == rhs.url && lhs.priority == rhs.priority && lhs.headers == rhs.headers
            && lhs.cachedValidators == rhs.cachedValidators
            && lhs.allowsInvalidSSLCertificates == rhs.allowsInvalidSSLCertificates
            && lhs.handlesCookies == rhs.handlesCookies && lhs.retryPolicy == rhs.retryPolicy
            && lhs.deliversReceivedBytes == rhs.deliversReceivedBytes
    }

    /// Hashes the request's data; hooks are not hashed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(priority)
        hasher.combine(headers)
        hasher.combine(cachedValidators)
        hasher.combine(allowsInvalidSSLCertificates)
        hasher.combine(handlesCookies)
        hasher.combine(retryPolicy)
        hasher.combine(deliversReceivedBytes)
    }
}

/// The status line and headers of a response, as a response modifier sees and changes them.
public struct ImageLoadResponseHead: Sendable, Hashable {
    /// The HTTP status.
    public var statusCode: Int
    /// Header names lower-cased.
    public var headers: [String: String]

    /// A head with the given status and lower-cased headers.
    public init(statusCode: Int, headers: [String: String]) {
        self.statusCode = statusCode
        self.headers = headers
    }
}

/// Per-request hooks (SDWebImage's request modifier, response modifier and decryptor, plus an
/// asynchronous hook for signing and token refresh). Set on a request (or an
/// ``ImageLoadContext``), each wins over the downloader's own for that request.
///
/// The transfer is shared only by requests whose final headers are the same (after
/// ``willLoad`` and ``requestModifier``); ``responseModifier`` and ``decryptor`` run once per
/// caller, on that caller's copy of the response.
///
/// ```swift
/// var hooks = ImageLoadHooks()
/// hooks.willLoad = { request in
///     var signed = request
///     signed.headers["Authorization"] = "Bearer \(try await tokens.current())"
///     return signed
/// }
/// let response = try await downloader.load(ImageLoadRequest(url: url, hooks: hooks))
/// ```
public struct ImageLoadHooks: Sendable {
    /// Runs before the request is queued, off the caller's thread; may suspend (fetch a token,
    /// sign). Throwing fails the request with the error (an ``ImageError`` as it is, anything
    /// else as `invalidURL`), and nothing is sent.
    public var willLoad: (@Sendable (ImageLoadRequest) async throws -> ImageLoadRequest)?
    // Spec: DL-07.
    /// Changes or refuses (nil) the request before it is sent.
    public var requestModifier: (@Sendable (ImageLoadRequest) -> ImageLoadRequest?)?
    // Spec: DL-08.
    /// Changes or refuses (nil → `invalidResponse`) the response's status and headers before
    /// they are checked.
    public var responseModifier: (@Sendable (ImageLoadResponseHead) -> ImageLoadResponseHead?)?
    // Spec: DL-09.
    /// Transforms the received bytes, for example decrypts them; nil refuses them.
    public var decryptor: (@Sendable (Data, _ headers: [String: String]) -> Data?)?

    /// Hooks; each one left nil falls back to the loader's own.
    public init(
        willLoad: (@Sendable (ImageLoadRequest) async throws -> ImageLoadRequest)? = nil,
        requestModifier: (@Sendable (ImageLoadRequest) -> ImageLoadRequest?)? = nil,
        responseModifier: (@Sendable (ImageLoadResponseHead) -> ImageLoadResponseHead?)? = nil,
        decryptor: (@Sendable (Data, _ headers: [String: String]) -> Data?)? = nil
    ) {
        self.willLoad = willLoad
        self.requestModifier = requestModifier
        self.responseModifier = responseModifier
        self.decryptor = decryptor
    }

    /// Whether no hook is set.
    public var isEmpty: Bool {
        willLoad == nil && requestModifier == nil && responseModifier == nil && decryptor == nil
    }
}

/// How a loader retries transient failures: connection refused or reset, timeouts, HTTP 5xx,
/// 408 and 429. Delays grow exponentially with full jitter; a `Retry-After` header (seconds or
/// an HTTP date) sets the delay instead when it is within ``maxRetryAfter``. A transfer whose
/// bytes a caller already looked at (a progressive preview) is never retried.
///
/// ```swift
/// var configuration = ImageDownloaderConfiguration()
/// configuration.retryPolicy = ImageRetryPolicy(maxRetries: 2)
/// ```
public struct ImageRetryPolicy: Sendable, Hashable {
    /// Attempts after the first (0: no retries).
    public var maxRetries: Int
    /// The first delay; attempt n waits a random time up to `baseDelay × 2ⁿ`.
    public var baseDelay: TimeInterval
    /// The longest delay between attempts.
    public var maxDelay: TimeInterval
    /// A longer `Retry-After` than this is not waited for: the failure is reported.
    public var maxRetryAfter: TimeInterval

    /// A policy of `maxRetries` retries with the given delays (seconds).
    public init(
        maxRetries: Int, baseDelay: TimeInterval = 0.2, maxDelay: TimeInterval = 5, maxRetryAfter: TimeInterval = 10
    ) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// No retries (the downloader's default).
    public static let none = ImageRetryPolicy(maxRetries: 0)

    /// The wait before retry number `attempt` (0 = the first retry), or nil when the response
    /// asks for longer than ``maxRetryAfter``. `random` is in 0...1.
    func delay(beforeRetry attempt: Int, retryAfter: TimeInterval?, random: Double) -> TimeInterval? {
        if let retryAfter {
            guard retryAfter <= maxRetryAfter else { return nil }
            return max(0, retryAfter)
        }
        let ceiling = min(maxDelay, baseDelay * pow(2, Double(min(attempt, 30))))
        return ceiling * min(1, max(0, random))
    }

    /// A `Retry-After` value in seconds from now: delta-seconds or an HTTP date.
    static func retryAfterSeconds(_ value: String?, now: Date = Date()) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return TimeInterval(max(0, seconds)) }
        guard let date = HTTPDate.parse(value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}

/// Bytes received so far and, when the server said, how many to expect.
public struct ImageLoadProgress: Sendable, Hashable {
    /// Bytes of the body received so far.
    public var receivedBytes: Int64
    /// nil when the length is unknown (chunked transfer, no Content-Length).
    public var expectedBytes: Int64?
    /// The body bytes that arrived since this caller's previous report, when its request asked
    /// for them (``ImageLoadRequest/deliversReceivedBytes``); nil otherwise. Appended in order,
    /// they are the body so far: a caller that joins a transfer already running gets everything
    /// received until then in its first report.
    public var newBytes: Data?

    /// A progress report.
    public init(receivedBytes: Int64, expectedBytes: Int64?, newBytes: Data? = nil) {
        self.receivedBytes = receivedBytes
        self.expectedBytes = expectedBytes
        self.newBytes = newBytes
    }

    /// The share received, 0 … 1; nil when the length is unknown.
    public var fractionCompleted: Double? {
        guard let expectedBytes, expectedBytes > 0 else { return nil }
        return min(1, Double(receivedBytes) / Double(expectedBytes))
    }
}

/// Timings and facts of one transfer, from curl.
public struct TransferMetrics: Sendable, Hashable {
    /// Seconds spent resolving the host name.
    public var nameLookup: TimeInterval = 0
    /// Seconds until the TCP connection was made.
    public var connect: TimeInterval = 0
    /// Seconds until the TLS handshake finished (0 for plain HTTP).
    public var tlsHandshake: TimeInterval = 0
    /// Seconds until the first byte of the response.
    public var timeToFirstByte: TimeInterval = 0
    /// Seconds for the whole transfer.
    public var total: TimeInterval = 0
    /// Bytes of body received.
    public var bytesReceived: Int64 = 0
    /// "1.1", "2", "3", or "" when unknown (a file or data URL).
    public var httpVersion: String = ""
    /// Whether an existing connection was reused.
    public var reusedConnection = false

    /// Metrics with every value zero.
    public init() {}
}

/// The outcome of a successful load.
public struct ImageLoadResponse: Sendable {
    /// The requested URL.
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
    /// Timings and byte counts of the transfer.
    public var metrics: TransferMetrics
    /// The URL the bytes came from after redirects (``url`` when there were none).
    public var finalURL: URL

    /// A response; loaders make these.
    public init(
        url: URL, data: Data, statusCode: Int = 200, headers: [String: String] = [:],
        isNotModified: Bool = false, metrics: TransferMetrics = TransferMetrics(), finalURL: URL? = nil
    ) {
        self.url = url
        self.finalURL = finalURL ?? url
        self.data = data
        self.statusCode = statusCode
        self.headers = headers
        self.isNotModified = isNotModified
        self.metrics = metrics
    }

    /// The headers the disk cache keeps with the entry.
    public var cacheHeaders: HTTPCacheHeaders {
        HTTPCacheHeaders(
            etag: headers["etag"], lastModified: headers["last-modified"], cacheControl: headers["cache-control"],
            expires: headers["expires"], date: headers["date"], contentType: headers["content-type"])
    }
}

/// A handle on one caller's interest in a load.
public protocol ImageLoadCancellable: Sendable {
    /// Detaches this caller: its completion reports ``ImageError/Code/cancelled`` (once). The
    /// transfer itself stops when no caller is left.
    func cancel()
    /// Raises or lowers the load's priority while it waits (a user load joining a prefetch).
    /// The loader uses the highest priority among the callers that share a transfer.
    func setPriority(_ priority: ImageLoadPriority)
}

extension ImageLoadCancellable {
    /// Does nothing: loaders without priorities ignore it.
    public func setPriority(_ priority: ImageLoadPriority) {}
}

/// Something that fetches image bytes for URLs (SDWebImage's `SDImageLoader`).
public protocol ImageLoading: Sendable {
    /// Whether this loader handles `url` (its scheme).
    func canLoad(_ url: URL) -> Bool
    /// Starts loading. `progress` is called with monotonic byte counts; `completion` exactly
    /// once, with the response or an ``ImageError``.
    @discardableResult
    func load(
        _ request: ImageLoadRequest,
        progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable
}

extension ImageLoading {
    /// Async form; cancelling the task cancels this caller's interest.
    public func load(
        _ request: ImageLoadRequest,
        progress: (@Sendable (ImageLoadProgress) -> Void)? = nil
    ) async throws(ImageError) -> ImageLoadResponse {
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
