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
public final class ImageDownloader: ImageLoading {
    /// The configuration the downloader was made with.
    public let configuration: ImageDownloaderConfiguration
    let engines: [CurlEngine]
    private let share: CurlShare
    private let bodyPool = BodyBufferPool()
    /// The default headers with the configuration's: what a request without its own sends.
    private let baseHeaders: [String: String]
    private let baseHeaderList: CurlHeaderList
    private let hostOverrides: CurlStringList?
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
        init(key: String, request: ImageLoadRequest, serviceContext: ServiceContext?) {
            self.key = key
            self.request = request
            self.serviceContext = serviceContext
        }

        /// The highest priority among the callers (the request's own when none is left).
        var priority: ImageLoadPriority { subscribers.values.map(\.priority).max() ?? request.priority }
    }

    /// Transfers not started yet: one deque per priority, so choosing the next one costs O(1)
    /// however long the queue is. A transfer abandoned or moved to another lane while waiting
    /// is only marked and skipped when its old entry reaches the front.
    struct WaitingQueue {
        private var lanes = [Deque<Operation>](repeating: [], count: ImageLoadPriority.allCases.count)
        private(set) var count = 0

        mutating func append(_ operation: Operation) {
            operation.isWaiting = true
            operation.lane = operation.priority.rawValue
            lanes[operation.lane].append(operation)
            count += 1
        }

        mutating func remove(_ operation: Operation) {
            guard operation.isWaiting else { return }
            operation.isWaiting = false
            count -= 1
        }

        /// Moves a waiting operation to the lane of its current priority (escalation).
        mutating func reprioritize(_ operation: Operation) {
            guard operation.isWaiting, operation.lane != operation.priority.rawValue else { return }
            operation.lane = operation.priority.rawValue
            lanes[operation.lane].append(operation)
        }

        /// Highest priority first; within one, oldest (FIFO) or newest (LIFO) first.
        mutating func next(lifo: Bool) -> Operation? {
            for lane in lanes.indices.reversed() {
                while let operation = lifo ? lanes[lane].popLast() : lanes[lane].popFirst() {
                    guard operation.isWaiting, operation.lane == lane else { continue }
                    operation.isWaiting = false
                    count -= 1
                    return operation
                }
            }
            return nil
        }

        var all: [Operation] {
            lanes.enumerated().flatMap { lane, operations in operations.filter { $0.isWaiting && $0.lane == lane } }
        }
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
        fileprivate weak var downloader: ImageDownloader?
        fileprivate let ticket: Ticket
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

    /// True for `http` and `https` URLs, and `s3` URLs when ``ImageDownloaderConfiguration/s3``
    /// is set.
    public func canLoad(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https" || (scheme == "s3" && configuration.s3 != nil)
    }

    /// Where a request's bytes are fetched from: its own http(s) URL, or for an `s3://` URL the
    /// store's (with the access that signs it).
    func transferTarget(for url: URL) throws(ImageError) -> (url: URL, s3: S3Access?) {
        guard url.scheme?.lowercased() == "s3" else { return (url, nil) }
        guard let s3 = configuration.s3 else { throw ImageError(.invalidURL, "no S3 access is configured") }
        return (try s3.httpURL(for: url), s3)
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
        submit(request, subscriber: Subscriber(progress: progress, completion: completion))
    }

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
                request, subscriber: Subscriber(progress: progress, completion: completion, resumesContinuation: true))
        }.get()
    }

    /// Loads `url` with default request settings.
    public func load(_ url: URL) async throws(ImageError) -> ImageLoadResponse {
        try await load(ImageLoadRequest(url: url))
    }

    // MARK: Queueing

    /// Runs the asynchronous hook (when there is one) and then ``enqueue(_:subscriber:ticket:)``.
    private func submit(_ request: ImageLoadRequest, subscriber: Subscriber) -> Token {
        var subscriber = subscriber
        subscriber.priority = request.priority
        subscriber.responseModifier = request.hooks.responseModifier ?? configuration.responseModifier
        subscriber.decryptor = request.hooks.decryptor ?? configuration.decryptor
        subscriber.wantsBytes = request.deliversReceivedBytes && subscriber.decryptor == nil
        guard let willLoad = request.hooks.willLoad ?? configuration.willLoad else {
            let ticket = Ticket(.done)
            enqueue(request, subscriber: subscriber, ticket: ticket)
            return Token(downloader: self, ticket: ticket)
        }
        let ticket = Ticket(.pending(cancelled: false, priority: nil))
        let captured = subscriber
        Task { [weak self] in
            let outcome: Result<ImageLoadRequest, ImageError>
            do {
                outcome = .success(try await willLoad(request))
            } catch let error as ImageError {
                outcome = .failure(error)
            } catch {
                outcome = .failure(ImageError(.invalidURL, "the willLoad hook refused \(request.url): \(error)"))
            }
            guard let self else {
                captured.completion(.failure(ImageError(.cancelled, "the downloader was shut down")))
                return
            }
            var subscriber = captured
            let (cancelled, priority) = ticket.place.withLock { place -> (Bool, ImageLoadPriority?) in
                guard case .pending(let cancelled, let priority) = place else { return (true, nil) }
                if cancelled { place = .done }
                return (cancelled, priority)
            }
            if cancelled {
                deliver(.failure(ImageError(.cancelled, "the download was cancelled")), to: [subscriber])
                return
            }
            switch outcome {
            case .failure(let error):
                ticket.place.withLock { $0 = .done }
                deliver(.failure(error), to: [subscriber])
            case .success(var hooked):
                hooked.hooks.willLoad = nil
                if let priority { hooked.priority = priority }
                subscriber.priority = hooked.priority
                enqueue(hooked, subscriber: subscriber, ticket: ticket)
            }
        }
        return Token(downloader: self, ticket: ticket)
    }

    /// The key transfers are shared by: the final URL and headers (digested), conditional
    /// requests apart, and TLS or cookie settings other than the configuration's.
    static func transferKey(for request: ImageLoadRequest, configuration: ImageDownloaderConfiguration) -> String {
        var key = request.url.absoluteString
        let digest = RequestHeaderDigest.digest(request.headers)
        if !digest.isEmpty { key += "\u{0}headers=" + digest }
        if request.cachedValidators != nil { key += "\u{0}conditional" }
        if let insecure = request.allowsInvalidSSLCertificates, insecure != configuration.allowsInvalidSSLCertificates {
            key += "\u{0}tls=\(insecure)"
        }
        if let cookies = request.handlesCookies, cookies != configuration.handlesCookies {
            key += "\u{0}cookies=\(cookies)"
        }
        return key
    }

    private func enqueue(_ request: ImageLoadRequest, subscriber: Subscriber, ticket: Ticket) {
        guard canLoad(request.url), request.url.host != nil else {
            ticket.place.withLock { $0 = .done }
            deliver(.failure(ImageError(.invalidURL, "cannot download \(request.url)")), to: [subscriber])
            return
        }
        let modifier = request.hooks.requestModifier ?? configuration.requestModifier
        guard let request = modifier.map({ $0(request) }) ?? request, canLoad(request.url), request.url.host != nil
        else {
            ticket.place.withLock { $0 = .done }
            deliver(.failure(ImageError(.invalidURL, "the request modifier refused \(request.url)")), to: [subscriber])
            return
        }
        do {
            _ = try transferTarget(for: request.url)
        } catch {
            ticket.place.withLock { $0 = .done }
            deliver(.failure(error), to: [subscriber])
            return
        }
        let key = Self.transferKey(for: request, configuration: configuration)
        let needsProgress = state.withLock { state -> (CurlTransfer, Int)? in
            state.sequence += 1
            let id = state.sequence
            ticket.place.withLock { $0 = .attached(key: key, id: id) }
            let operation: Operation
            if let existing = state.operations[key] {
                operation = existing
                operation.subscribers[id] = subscriber
                state.waiting.reprioritize(operation)
            } else {
                operation = Operation(key: key, request: request, serviceContext: ServiceContext.current)
                operation.subscribers[id] = subscriber
                state.operations[key] = operation
                state.waiting.append(operation)
            }
            guard subscriber.progress != nil, !operation.reportsProgress else { return nil }
            operation.reportsProgress = true
            guard let transfer = operation.transfer, let engine = operation.engine else { return nil }
            return (transfer, engine)  // running without progress: turn it on
        }
        if let (transfer, engine) = needsProgress { engines[engine].send(.reportProgress(transfer)) }
        pump()
    }

    /// Starts waiting transfers while there is room: highest priority first, then FIFO or LIFO.
    func pump() {
        let starting: [Operation] = state.withLock { state in
            var started: [Operation] = []
            let lifo = configuration.executionOrder == .lifo
            while !state.suspended, state.running < max(1, configuration.maxConcurrentDownloads),
                let operation = state.waiting.next(lifo: lifo)
            {
                state.running += 1
                started.append(operation)
            }
            return started
        }
        for operation in starting { start(operation) }
    }

    /// What is left of the transfer's ``ImageDownloaderConfiguration/totalTimeout`` (nil: no
    /// deadline), counted from its first attempt.
    func remainingTime(of operation: Operation, now: DispatchTime = .now()) -> TimeInterval? {
        guard let total = configuration.totalTimeout else { return nil }
        guard let first = operation.firstStart else { return total }
        return total - Double(now.uptimeNanoseconds &- first.uptimeNanoseconds) / 1e9
    }

    private func start(_ operation: Operation) {
        let request = operation.request
        let now = DispatchTime.now()
        // Under the state lock: `finish` reads it there when it decides on a retry.
        let (remaining, attempt) = state.withLock { _ -> (TimeInterval?, Int) in
            if operation.firstStart == nil { operation.firstStart = now }
            return (remainingTime(of: operation, now: now), operation.attempt)
        }
        // Checked when the request was queued: an s3:// URL has an address and an access.
        guard let target = try? transferTarget(for: request.url) else {
            finish(operation, .failure(ImageError(.invalidURL, "cannot download \(request.url)")))
            return
        }
        let span = operation.serviceContext.map { Self.startClientSpan(in: $0, url: target.url, attempt: attempt) }
        let traceHeaders = span.map { ImageKitTracing.propagationHeaders(for: $0.context) } ?? [:]
        var headerList = baseHeaderList
        var userAgent: String?
        let resume =
            configuration.resumableDataLimit > 0 && request.cachedValidators == nil
            ? resumable.take(operation.key) : nil
        if !request.headers.isEmpty || request.cachedValidators != nil || resume != nil || target.s3 != nil
            || !traceHeaders.isEmpty
        {
            var headers = baseHeaders.merging(request.headers) { $1 }.merging(traceHeaders) { $1 }
            if let s3 = target.s3 {
                headers.merge(s3.signedHeaders) { $1 }
                // curl signs every header of the list; signers (botocore, hence moto) leave
                // User-Agent out, and proxies rewrite it: sent as curl's own, unsigned.
                for name in headers.keys where name.lowercased() == "user-agent" {
                    userAgent = headers.removeValue(forKey: name)
                }
            }
            if let validators = request.cachedValidators {
                if let etag = validators.etag { headers["If-None-Match"] = etag }
                if let lastModified = validators.lastModified { headers["If-Modified-Since"] = lastModified }
            }
            if let resume {
                headers["Range"] = "bytes=\(resume.data.count)-"
                headers["If-Range"] = resume.validator
            }
            headerList = CurlHeaderList(headers)
        }
        var options = CurlTransferOptions(
            url: target.url, headers: headerList,
            connectTimeout: configuration.connectTimeout ?? configuration.timeout,
            stallTimeout: configuration.timeout, totalTimeout: remaining.map { max(0.001, $0) },
            maxRedirects: configuration.maxRedirects,
            maxBodySize: configuration.maxBodySize,
            allowsInvalidCertificates: request.allowsInvalidSSLCertificates
                ?? configuration.allowsInvalidSSLCertificates,
            handlesCookies: request.handlesCookies ?? configuration.handlesCookies,
            credentials: configuration.credentials,
            addressPolicy: configuration.addressPolicy, proxy: configuration.proxy, noProxy: configuration.noProxy,
            caBundlePath: configuration.caBundlePath, caDirectory: configuration.caDirectory,
            pinnedPublicKey: configuration.pinnedPublicKey, hostOverrides: hostOverrides,
            curlOptions: configuration.curlOptions)
        if let s3 = target.s3 {
            options.awsSigV4 = (s3.sigV4Provider, s3.accessKeyID, s3.secretAccessKey)
            options.userAgent = userAgent
            options.credentials = nil
            // A signature holds for one host: S3 answers a wrong region with a redirect that
            // must not be followed with it. The address policy applies to the store as to any host.
            options.maxRedirects = 0
        }
        let transfer = CurlTransfer(options: options, bodyPool: bodyPool)
        transfer.onProgress = { [weak self] progress in
            self?.deliverProgress(
                of: operation, progress.offset(by: Int64(resume?.data.count ?? 0)), resumedFrom: resume?.data)
        }
        transfer.onComplete = { [weak self] transfer, code in
            guard let self else {
                span?.end()
                return
            }
            let outcome = self.outcome(of: transfer, code: code, request: request, resumedFrom: resume)
            if let span { Self.endClientSpan(span, outcome) }
            finish(operation, outcome)
        }
        let host = target.url.host ?? ""
        let multiplexes = target.url.scheme?.lowercased() == "https"
        let (cancelledMeanwhile, engine) = state.withLock { state -> (Bool, Int) in
            let engine = Self.engine(for: host, multiplexes: multiplexes, loads: state.engineLoads)
            state.engineLoads[engine] += 1
            operation.engine = engine
            operation.transfer = transfer
            operation.reportsProgress = operation.subscribers.values.contains { $0.progress != nil }
            transfer.reportsProgress = operation.reportsProgress
            return (operation.subscribers.isEmpty, engine)
        }
        if cancelledMeanwhile {
            span?.end()
            finish(operation, .failure(ImageError(.cancelled, "cancelled before it started")))
            return
        }
        engines[engine].send(.add(transfer))
    }

    /// HTTPS to one host stays on one engine (HTTP/2 multiplexes on one connection per multi
    /// handle); anything else goes to the least busy one.
    static func engine(for host: String, multiplexes: Bool, loads: [Int]) -> Int {
        guard loads.count > 1 else { return 0 }
        if multiplexes {
            var hash: UInt32 = 2_166_136_261  // FNV-1a: the same host always lands on the same engine
            for byte in host.lowercased().utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
            return Int(hash % UInt32(loads.count))
        }
        return loads.indices.min { loads[$0] < loads[$1] }!
    }

    /// Tells every caller of `operation` its progress (on the transfer thread, called by curl);
    /// a caller that asked for the bytes gets those it has not been handed yet, copied once.
    private func deliverProgress(of operation: Operation, _ progress: ImageLoadProgress, resumedFrom prefix: Data?) {
        let reports = state.withLock { _ -> [(@Sendable (ImageLoadProgress) -> Void, ImageLoadProgress)] in
            var reports: [(@Sendable (ImageLoadProgress) -> Void, ImageLoadProgress)] = []
            for (id, subscriber) in operation.subscribers {
                guard let callback = subscriber.progress else { continue }
                var report = progress
                if subscriber.wantsBytes, let transfer = operation.transfer {
                    let bytes = transfer.body(from: subscriber.bytesDelivered, after: prefix ?? Data())
                    operation.subscribers[id]?.bytesDelivered += bytes.count
                    operation.bytesObserved = true
                    report.newBytes = bytes
                }
                reports.append((callback, report))
            }
            return reports
        }
        guard !reports.isEmpty else { return }
        configuration.callbackQueue.async { for (callback, report) in reports { callback(report) } }
    }

    private func setPriority(_ priority: ImageLoadPriority, of ticket: Ticket) {
        let attached = ticket.place.withLock { place -> (String, Int)? in
            switch place {
            case .pending(let cancelled, _):
                place = .pending(cancelled: cancelled, priority: priority)
                return nil
            case .attached(let key, let id): return (key, id)
            case .done: return nil
            }
        }
        guard let (key, id) = attached else { return }
        state.withLock { state in
            guard let operation = state.operations[key], operation.subscribers[id] != nil else { return }
            operation.subscribers[id]?.priority = priority
            state.waiting.reprioritize(operation)
        }
    }

}

extension ImageLoadProgress {
    /// The same progress with `offset` bytes received before (a resumed transfer).
    func offset(by offset: Int64) -> ImageLoadProgress {
        guard offset > 0 else { return self }
        return ImageLoadProgress(
            receivedBytes: receivedBytes + offset, expectedBytes: expectedBytes.map { $0 + offset })
    }
}
