internal import CCurl
import DequeModule
import Foundation
import Logging
import Tracing

/// Downloads image bytes over HTTP(S) with libcurl (SDWebImage's `SDWebImageDownloader`).
///
/// Concurrent requests for one URL with the same final headers share one transfer; each
/// caller gets its own progress, its own token, its own response hooks and exactly one
/// completion. Requests with other headers (another `Authorization`, another tenant) never
/// share a transfer or its bytes. Cancelling a token detaches that caller only; the transfer
/// stops when the last one leaves. A request arriving after a transfer finished starts a new one.
///
/// ```swift
/// let downloader = ImageDownloader()
/// let response = try await downloader.load(URL(string: "https://example.com/a.jpg")!)
/// let image = try ImageCodersManager.shared.decode(response.data)
/// ```
public final class ImageDownloader: SourceLoading {
    /// The configuration the downloader was made with.
    public let configuration: ImageDownloaderConfiguration
    let engines: [CurlEngine]
    let share: CurlShare
    let bodyPool = BodyBufferPool()
    /// The default headers with the configuration's: what a request without its own sends.
    let baseHeaders: [String: String]
    let baseHeaderList: CurlHeaderList
    let hostOverrides: CurlStringList?
    let resumable: ResumableDataStore
    let metrics: ImageKitMetrics
    let logger: Logger
    let state = Locked(State())

    struct State {
        var operations: [String: Operation] = [:]
        var waiting = WaitingQueue()
        var running = 0
        /// Transfers on each engine.
        var engineLoads: [Int] = []
        var suspended = false
        var sequence = 0
    }

    /// One shared transfer and its callers.
    final class Operation: @unchecked Sendable {
        // Invariant: mutable fields are touched only under the downloader's state lock.
        let key: String
        let request: ImageLoadRequest
        var subscribers: [Int: Subscriber] = [:]
        var transfer: CurlTransfer?
        var engine: Int?
        /// Queued and not yet started or abandoned; `lane` is the priority lane it waits in.
        var isWaiting = false
        var lane = 0
        /// Waiting out a retry delay: neither queued nor running.
        var isBackingOff = false
        /// Retries made so far.
        var attempt = 0
        /// When the first attempt started: ``ImageDownloaderConfiguration/totalTimeout`` is one
        /// budget for every attempt together.
        var firstStart: DispatchTime?
        /// A caller looked at the bytes while they arrived (a progressive preview): retrying
        /// would show it another image's start again, so this transfer is never retried.
        var bytesObserved = false
        /// Whether the transfer reports progress (only when some caller asked for it: curl
        /// calls the progress function for every handle on every pass otherwise).
        var reportsProgress = false
        /// The trace of the caller that started the transfer: each attempt is a client span in
        /// it, and the origin receives that span's `traceparent`.
        let serviceContext: ServiceContext?
        /// Where the transfer goes and how it is signed.
        let route: TransferRoute
        init(key: String, request: ImageLoadRequest, route: TransferRoute, serviceContext: ServiceContext?) {
            self.key = key
            self.request = request
            self.route = route
            self.serviceContext = serviceContext
        }

        /// The highest priority among the callers (the request's own when none is left).
        var priority: ImageLoadPriority { subscribers.values.map(\.priority).max() ?? request.priority }
    }

    struct Subscriber {
        var progress: (@Sendable (ImageLoadProgress) -> Void)?
        var completion: @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
        /// Only resumes a continuation, which is cheap and safe on any thread: called at once
        /// instead of through the callback queue (one thread hop fewer per download).
        var resumesContinuation = false
        var priority: ImageLoadPriority = .normal
        /// This caller's response hooks (its request's, else the configuration's).
        var responseModifier: (@Sendable (ImageLoadResponseHead) -> ImageLoadResponseHead?)?
        var decryptor: (@Sendable (Data, [String: String]) -> Data?)?
        /// This caller's progress carries the body (``ImageLoadRequest/deliversReceivedBytes``).
        var wantsBytes = false
        /// Body bytes this caller has been handed so far.
        var bytesDelivered = 0
    }

    /// Hands each subscriber its result: continuations directly, callbacks on the callback queue.
    func deliver(_ results: [(Subscriber, Result<ImageLoadResponse, ImageError>)]) {
        for (subscriber, result) in results where subscriber.resumesContinuation { subscriber.completion(result) }
        let queued = results.filter { !$0.0.resumesContinuation }
        guard !queued.isEmpty else { return }
        configuration.callbackQueue.async { for (subscriber, result) in queued { subscriber.completion(result) } }
    }

    func deliver(_ result: Result<ImageLoadResponse, ImageError>, to subscribers: [Subscriber]) {
        deliver(subscribers.map { ($0, result) })
    }

    /// One caller's handle. Valid from the start, also while an asynchronous
    /// ``ImageLoadHooks/willLoad`` hook still runs.
    public struct Token: ImageLoadCancellable {
        weak var downloader: ImageDownloader?
        let ticket: Ticket
        /// Detaches this caller (its completion reports `cancelled`); the transfer stops when no caller is left.
        public func cancel() { downloader?.cancel(ticket) }
        /// Re-ranks the transfer while it waits: it runs at the highest priority among its callers.
        public func setPriority(_ priority: ImageLoadPriority) { downloader?.setPriority(priority, of: ticket) }
    }

    /// Where one caller is: waiting for its hook, subscribed to an operation, or done.
    final class Ticket: Sendable {
        enum Place {
            case pending(cancelled: Bool, priority: ImageLoadPriority?)
            case attached(key: String, id: Int)
            case done
        }
        let place: Locked<Place>
        init(_ place: Place) { self.place = Locked(place) }
    }

    /// A downloader with its own curl multi handle and transfer thread.
    public init(configuration: ImageDownloaderConfiguration = ImageDownloaderConfiguration()) {
        self.configuration = configuration
        baseHeaders = ImageDownloaderConfiguration.defaultHeaders.merging(configuration.headers) { $1 }
        baseHeaderList = CurlHeaderList(baseHeaders)
        hostOverrides = configuration.hostOverrides.isEmpty ? nil : CurlStringList(configuration.hostOverrides)
        resumable = ResumableDataStore(limit: configuration.resumableDataLimit)
        metrics = ImageKitMetrics(factory: configuration.telemetry.metricsFactory)
        logger = configuration.telemetry.logger
        share = CurlShare(cookies: configuration.handlesCookies)
        let count = max(1, configuration.networkThreads)
        let shareHandle = share.handle
        // Not divided between engines: HTTPS to one host runs on one engine and needs the
        // whole per-host limit there, and a reset handle is small (curl frees its buffers
        // after each transfer).
        engines = (0..<count).map { _ in
            CurlEngine(
                maxHostConnections: configuration.maxConnectionsPerHost,
                maxTotalConnections: configuration.maxTotalConnections,
                maxIdleHandles: min(max(configuration.maxConcurrentDownloads, 1), 64),
                share: shareHandle)
        }
        state.withLock { $0.engineLoads = Array(repeating: 0, count: count) }
    }

    deinit {
        for engine in engines { engine.shutdown() }  // before `share` goes
        // Callers of transfers that never started (or wait for a retry) are told too.
        let waiting = state.withLock { state in
            state.operations.values.filter { $0.transfer == nil }.flatMap { Array($0.subscribers.values) }
        }
        deliver(.failure(ImageError(.cancelled, "the downloader was shut down")), to: waiting)
    }

    /// `http` and `https`.
    public var schemes: Set<String> { ["http", "https"] }

    /// True for `http` and `https` URLs.
    public func canLoad(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// True when the URL's host is among ``ImageDownloaderConfiguration/allowedHosts`` (or that
    /// list is empty).
    public func allows(_ url: URL) -> Bool {
        configuration.allowedHosts.isEmpty || SourceText.host(url.host ?? "", matchesAnyOf: configuration.allowedHosts)
    }

    /// Where a transfer goes and how it is signed: a request's own http(s) URL, or for a store
    /// loader's URL (``S3Loader``) the store's endpoint.
    struct TransferRoute: Sendable {
        var url: URL
        /// Signs the request with AWS Signature V4 (S3 and compatible stores).
        var awsSigning: S3Access?
    }

    /// The route of a plain http(s) request: its own URL, when its host is allowed.
    func webRoute(_ url: URL) throws(ImageError) -> TransferRoute {
        guard canLoad(url), url.host != nil else { throw ImageError(.invalidURL, "cannot download \(url)") }
        guard allows(url) else { throw ImageError(.invalidURL, "the host of \(url) is not among the allowed ones") }
        return TransferRoute(url: url)
    }

    /// Holds queued transfers back (running ones go on) until ``resume()``.
    public func suspend() { state.withLock { $0.suspended = true } }

    /// Starts waiting transfers again after `suspend()`.
    public func resume() {
        state.withLock { $0.suspended = false }
        pump()
    }

    /// Cancels every caller of every transfer.
    public func cancelAll() {
        let tokens = state.withLock { state in
            state.operations.values.flatMap { operation in operation.subscribers.keys.map { (operation.key, $0) } }
        }
        for (key, id) in tokens { cancel(key: key, id: id) }
    }

    /// Transfers running now, and waiting.
    public var activeCount: Int { state.withLock { $0.running } }
    /// The number of transfers waiting for a free slot.
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Starts loading `request` (see ``download(_:progress:completion:)``).
    @discardableResult
    public func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        download(request, progress: progress, completion: completion)
    }

    /// ``load(_:progress:completion:)`` with the concrete token type.
    @discardableResult
    public func download(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> Token {
        submit(request, subscriber: Subscriber(progress: progress, completion: completion), router: nil)
    }

    /// Downloads a store loader's URL (``S3Loader``): `router` maps the request's URL (after the
    /// request modifier) to where the transfer goes and how it is signed.
    func download(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void,
        router: @escaping TransferRouter
    ) -> Token {
        submit(request, subscriber: Subscriber(progress: progress, completion: completion), router: router)
    }

    typealias TransferRouter = @Sendable (URL) throws(ImageError) -> TransferRoute

    /// Async form of ``download(_:progress:completion:)``; cancelling the task cancels this
    /// caller's interest. The task is resumed straight from the transfer's completion, without
    /// a hop through ``ImageDownloaderConfiguration/callbackQueue``.
    ///
    /// ```swift
    /// let response = try await downloader.load(ImageLoadRequest(url: url, priority: .high))
    /// ```
    public func load(_ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)? = nil)
        async throws(ImageError) -> ImageLoadResponse
    {
        try await awaitingLoad { completion in
            submit(
                request, subscriber: Subscriber(progress: progress, completion: completion, resumesContinuation: true),
                router: nil)
        }.get()
    }

    /// Loads `url` with default request settings.
    public func load(_ url: URL) async throws(ImageError) -> ImageLoadResponse {
        try await load(ImageLoadRequest(url: url))
    }
}
