import CCurl
import DequeModule
import Foundation

/// Settings of an ``ImageDownloader`` (defaults from SDWebImage where it has one).
public struct ImageDownloaderConfiguration: Sendable {
    public enum ExecutionOrder: Sendable { case fifo, lifo }

    /// Transfers running at once (6); the rest wait, by priority and then ``executionOrder``.
    public var maxConcurrentDownloads: Int
    /// Stall timeout: a transfer that receives nothing for this long fails (15 s). A large image
    /// on a slow but steady link is not killed by it.
    public var timeout: TimeInterval
    /// Connection set-up limit (defaults to ``timeout``).
    public var connectTimeout: TimeInterval?
    /// An overall deadline per transfer; nil = none.
    public var totalTimeout: TimeInterval?
    public var executionOrder: ExecutionOrder
    /// Headers sent with every request (a request's own headers win).
    public var headers: [String: String]
    public var acceptableStatusCodes: Range<Int>
    /// When set, responses whose Content-Type (without parameters) is not listed fail.
    public var acceptableContentTypes: Set<String>?
    /// Bodies larger than this fail with ``ImageError/Code/responseTooLarge``, with or without
    /// a Content-Length (default 256 MiB).
    public var maxBodySize: Int?
    public var maxRedirects: Int
    public var credentials: (user: String, password: String)?
    /// curl's in-memory cookie engine (off by default).
    public var handlesCookies: Bool
    /// Accept any TLS certificate (off by default; for tests and self-signed servers).
    public var allowsInvalidSSLCertificates: Bool
    /// Connections to one host at once (6), and in all (0: no limit), per network thread
    /// (``networkThreads``). Connections in use never exceed ``maxConcurrentDownloads``; plain
    /// HTTP spread over several threads may keep up to `networkThreads` times this many open.
    public var maxConnectionsPerHost: Int
    public var maxTotalConnections: Int
    /// Threads that run transfers, each with its own curl multi handle (default: 2 when the
    /// machine has two cores or more, else 1). Plain-HTTP transfers go to the least busy
    /// thread; HTTPS transfers to one host always share a thread, so HTTP/2 multiplexes them
    /// on one connection. More than one lets receiving (a copy per byte, TLS decryption)
    /// use a second core when many transfers run at once.
    public var networkThreads: Int
    /// Changes or refuses (nil) a request before it is sent (SDWebImage's request modifier).
    public var requestModifier: (@Sendable (ImageLoadRequest) -> ImageLoadRequest?)?
    /// Inspects a response's status and headers; returning false refuses it.
    public var responseValidator: (@Sendable (_ statusCode: Int, _ headers: [String: String]) -> Bool)?
    /// Transforms the received bytes (for example base64-decodes them); nil refuses them.
    public var decryptor: (@Sendable (Data, _ headers: [String: String]) -> Data?)?
    /// Where progress and completions are delivered (never the curl thread).
    public var callbackQueue: DispatchQueue

    public init(maxConcurrentDownloads: Int = 6, timeout: TimeInterval = 15, connectTimeout: TimeInterval? = nil,
                totalTimeout: TimeInterval? = nil, executionOrder: ExecutionOrder = .fifo, headers: [String: String] = [:],
                acceptableStatusCodes: Range<Int> = 200..<300, acceptableContentTypes: Set<String>? = nil,
                maxBodySize: Int? = 256 << 20, maxRedirects: Int = 10, credentials: (user: String, password: String)? = nil,
                handlesCookies: Bool = false, allowsInvalidSSLCertificates: Bool = false, maxConnectionsPerHost: Int = 6,
                maxTotalConnections: Int = 0, networkThreads: Int = min(2, ProcessInfo.processInfo.activeProcessorCount),
                callbackQueue: DispatchQueue = DispatchQueue(label: "ImageKit.ImageDownloader.callbacks")) {
        self.networkThreads = networkThreads
        self.maxConcurrentDownloads = maxConcurrentDownloads
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.executionOrder = executionOrder
        self.headers = headers
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
        self.maxBodySize = maxBodySize
        self.maxRedirects = maxRedirects
        self.credentials = credentials
        self.handlesCookies = handlesCookies
        self.allowsInvalidSSLCertificates = allowsInvalidSSLCertificates
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxTotalConnections = maxTotalConnections
        self.callbackQueue = callbackQueue
    }

    /// ``acceptHeader`` and `User-Agent: ImageKit/<version>`. A request modifier may replace
    /// either.
    public static var defaultHeaders: [String: String] {
        ["Accept": acceptHeader, "User-Agent": "ImageKit/\(ImageKit.version)"]
    }

    /// The `Accept` value: the formats this build decodes that a server would pick over JPEG
    /// and PNG, best first (AVIF, JPEG XL, WebP, APNG), then any image at q=0.8 (JPEG, PNG, GIF
    /// and the rest), as browsers send it. With every trait enabled:
    /// `image/avif,image/jxl,image/webp,image/apng,image/*;q=0.8`.
    public static var acceptHeader: String {
        var types: [String] = []
        #if AVIF
        types.append("image/avif")
        #endif
        #if JXL
        types.append("image/jxl")
        #endif
        types += ["image/webp", "image/apng", "image/*;q=0.8"]
        return types.joined(separator: ",")
    }
}

/// Downloads image bytes over HTTP(S) with libcurl (SDWebImage's `SDWebImageDownloader`).
///
/// Concurrent requests for one URL share one transfer; each caller gets its own progress,
/// its own token and exactly one completion. Cancelling a token detaches that caller only; the
/// transfer stops when the last one leaves. A request arriving after a transfer finished starts
/// a new one.
///
/// ```swift
/// let downloader = ImageDownloader()
/// let response = try await downloader.load(URL(string: "https://example.com/a.jpg")!)
/// let image = try ImageCodersManager.shared.decode(response.data)
/// ```
public final class ImageDownloader: ImageLoading {
    public let configuration: ImageDownloaderConfiguration
    private let engines: [CurlEngine]
    private let share: CurlShare
    private let bodyPool = BodyBufferPool()
    /// The default headers with the configuration's: what a request without its own sends.
    private let baseHeaders: [String: String]
    private let baseHeaderList: CurlHeaderList
    private let state = Locked(State())

    private struct State {
        var operations: [String: Operation] = [:]
        var waiting = WaitingQueue()
        var running = 0
        /// Transfers on each engine.
        var engineLoads: [Int] = []
        var suspended = false
        var sequence = 0
    }

    /// One shared transfer and its callers.
    private final class Operation: @unchecked Sendable {
        // Invariant: mutable fields are touched only under the downloader's state lock.
        let key: String
        let request: ImageLoadRequest
        var subscribers: [Int: Subscriber] = [:]
        var transfer: CurlTransfer?
        var engine: Int?
        /// Queued and not yet started or abandoned.
        var isWaiting = false
        /// Whether the transfer reports progress (only when some caller asked for it: curl
        /// calls the progress function for every handle on every pass otherwise).
        var reportsProgress = false
        init(key: String, request: ImageLoadRequest) {
            self.key = key
            self.request = request
        }
    }

    /// Transfers not started yet: one deque per priority, so choosing the next one costs O(1)
    /// however long the queue is. A transfer abandoned while waiting is only marked and skipped
    /// when it reaches the front.
    private struct WaitingQueue {
        private var lanes = [Deque<Operation>](repeating: [], count: ImageLoadPriority.allCases.count)
        private(set) var count = 0

        mutating func append(_ operation: Operation) {
            operation.isWaiting = true
            lanes[operation.request.priority.rawValue].append(operation)
            count += 1
        }

        mutating func remove(_ operation: Operation) {
            guard operation.isWaiting else { return }
            operation.isWaiting = false
            count -= 1
        }

        /// Highest priority first; within one, oldest (FIFO) or newest (LIFO) first.
        mutating func next(lifo: Bool) -> Operation? {
            for lane in lanes.indices.reversed() {
                while let operation = lifo ? lanes[lane].popLast() : lanes[lane].popFirst() {
                    guard operation.isWaiting else { continue }
                    operation.isWaiting = false
                    count -= 1
                    return operation
                }
            }
            return nil
        }

        var all: [Operation] { lanes.joined().filter(\.isWaiting) }
    }

    private struct Subscriber {
        var progress: (@Sendable (ImageLoadProgress) -> Void)?
        var completion: @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
        /// Only resumes a continuation, which is cheap and safe on any thread: called at once
        /// instead of through the callback queue (one thread hop fewer per download).
        var resumesContinuation = false
    }

    /// Hands `result` to each subscriber: continuations directly, callbacks on the callback queue.
    private func deliver(_ result: Result<ImageLoadResponse, ImageError>, to subscribers: [Subscriber]) {
        for subscriber in subscribers where subscriber.resumesContinuation { subscriber.completion(result) }
        let queued = subscribers.filter { !$0.resumesContinuation }
        guard !queued.isEmpty else { return }
        configuration.callbackQueue.async { for subscriber in queued { subscriber.completion(result) } }
    }

    /// One caller's handle.
    public struct Token: ImageLoadCancellable {
        fileprivate weak var downloader: ImageDownloader?
        fileprivate let key: String
        fileprivate let id: Int
        public func cancel() { downloader?.cancel(key: key, id: id) }
        /// The bytes received so far (a copy, taken only when asked: for progressive decoding).
        public func receivedData() -> Data? { downloader?.snapshot(key: key) }
    }

    public init(configuration: ImageDownloaderConfiguration = ImageDownloaderConfiguration()) {
        self.configuration = configuration
        baseHeaders = ImageDownloaderConfiguration.defaultHeaders.merging(configuration.headers) { $1 }
        baseHeaderList = CurlHeaderList(baseHeaders)
        share = CurlShare(cookies: configuration.handlesCookies)
        let count = max(1, configuration.networkThreads)
        let shareHandle = share.handle
        // Not divided between engines: HTTPS to one host runs on one engine and needs the
        // whole per-host limit there, and a reset handle is small (curl frees its buffers
        // after each transfer).
        engines = (0..<count).map { _ in
            CurlEngine(maxHostConnections: configuration.maxConnectionsPerHost,
                       maxTotalConnections: configuration.maxTotalConnections,
                       maxIdleHandles: min(max(configuration.maxConcurrentDownloads, 1), 64),
                       share: shareHandle)
        }
        state.withLock { $0.engineLoads = Array(repeating: 0, count: count) }
    }

    deinit {
        for engine in engines { engine.shutdown() } // before `share` goes
        // Callers of transfers that never started are told too.
        let waiting = state.withLock { state in state.waiting.all.flatMap { Array($0.subscribers.values) } }
        deliver(.failure(ImageError(.cancelled, "the downloader was shut down")), to: waiting)
    }

    public func canLoad(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// Holds queued transfers back (running ones go on) until ``resume()``.
    public func suspend() { state.withLock { $0.suspended = true } }

    public func resume() {
        state.withLock { $0.suspended = false }
        pump()
    }

    /// Cancels every caller of every transfer.
    public func cancelAll() {
        let tokens = state.withLock { state in state.operations.values.flatMap { operation in operation.subscribers.keys.map { (operation.key, $0) } } }
        for (key, id) in tokens { cancel(key: key, id: id) }
    }

    /// Transfers running now, and waiting.
    public var activeCount: Int { state.withLock { $0.running } }
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    @discardableResult
    public func load(_ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
                     completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void) -> any ImageLoadCancellable {
        download(request, progress: progress, completion: completion)
    }

    /// ``load(_:progress:completion:)`` with the concrete token type.
    @discardableResult
    public func download(_ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)? = nil,
                         completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void) -> Token {
        enqueue(request, subscriber: Subscriber(progress: progress, completion: completion))
    }

    /// Async form of ``download(_:progress:completion:)``; cancelling the task cancels this
    /// caller's interest. The task is resumed straight from the transfer's completion, without
    /// a hop through ``ImageDownloaderConfiguration/callbackQueue``.
    ///
    /// ```swift
    /// let response = try await downloader.load(ImageLoadRequest(url: url, priority: .high))
    /// ```
    public func load(_ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)? = nil) async throws(ImageError) -> ImageLoadResponse {
        try await awaitingLoad { completion in
            enqueue(request, subscriber: Subscriber(progress: progress, completion: completion, resumesContinuation: true))
        }.get()
    }

    /// Loads `url` with default request settings.
    public func load(_ url: URL) async throws(ImageError) -> ImageLoadResponse {
        try await load(ImageLoadRequest(url: url))
    }

    private func enqueue(_ request: ImageLoadRequest, subscriber: Subscriber) -> Token {
        guard canLoad(request.url), request.url.host != nil else {
            deliver(.failure(ImageError(.invalidURL, "cannot download \(request.url)")), to: [subscriber])
            return Token(downloader: nil, key: "", id: 0)
        }
        guard let request = configuration.requestModifier.map({ $0(request) }) ?? request else {
            deliver(.failure(ImageError(.invalidURL, "the request modifier refused \(request.url)")), to: [subscriber])
            return Token(downloader: nil, key: "", id: 0)
        }
        // Conditional requests do not share a transfer with plain ones.
        var key = request.url.absoluteString
        if request.cachedValidators != nil { key += "\u{0}conditional" }
        // Transfers with other TLS or cookie settings than the configuration's run on their own.
        if let insecure = request.allowsInvalidSSLCertificates, insecure != configuration.allowsInvalidSSLCertificates {
            key += "\u{0}tls=\(insecure)"
        }
        if let cookies = request.handlesCookies, cookies != configuration.handlesCookies { key += "\u{0}cookies=\(cookies)" }
        let (id, needsProgress) = state.withLock { state -> (Int, (CurlTransfer, Int)?) in
            state.sequence += 1
            let id = state.sequence
            let operation: Operation
            if let existing = state.operations[key] {
                operation = existing
            } else {
                operation = Operation(key: key, request: request)
                state.operations[key] = operation
                state.waiting.append(operation)
            }
            operation.subscribers[id] = subscriber
            guard subscriber.progress != nil, !operation.reportsProgress else { return (id, nil) }
            operation.reportsProgress = true
            guard let transfer = operation.transfer, let engine = operation.engine else { return (id, nil) }
            return (id, (transfer, engine)) // running without progress: turn it on
        }
        if let (transfer, engine) = needsProgress { engines[engine].send(.reportProgress(transfer)) }
        pump()
        return Token(downloader: self, key: key, id: id)
    }

    /// Starts waiting transfers while there is room: highest priority first, then FIFO or LIFO.
    private func pump() {
        let starting: [Operation] = state.withLock { state in
            var started: [Operation] = []
            let lifo = configuration.executionOrder == .lifo
            while !state.suspended, state.running < max(1, configuration.maxConcurrentDownloads),
                  let operation = state.waiting.next(lifo: lifo) {
                state.running += 1
                started.append(operation)
            }
            return started
        }
        for operation in starting { start(operation) }
    }

    private func start(_ operation: Operation) {
        let request = operation.request
        var headerList = baseHeaderList
        if !request.headers.isEmpty || request.cachedValidators != nil {
            var headers = baseHeaders.merging(request.headers) { $1 }
            if let validators = request.cachedValidators {
                if let etag = validators.etag { headers["If-None-Match"] = etag }
                if let lastModified = validators.lastModified { headers["If-Modified-Since"] = lastModified }
            }
            headerList = CurlHeaderList(headers)
        }
        let options = CurlTransferOptions(
            url: request.url, headers: headerList, connectTimeout: configuration.connectTimeout ?? configuration.timeout,
            stallTimeout: configuration.timeout, totalTimeout: configuration.totalTimeout, maxRedirects: configuration.maxRedirects,
            maxBodySize: configuration.maxBodySize,
            allowsInvalidCertificates: request.allowsInvalidSSLCertificates ?? configuration.allowsInvalidSSLCertificates,
            handlesCookies: request.handlesCookies ?? configuration.handlesCookies, credentials: configuration.credentials)
        let transfer = CurlTransfer(options: options, bodyPool: bodyPool)
        transfer.onProgress = { [weak self] progress in self?.deliverProgress(of: operation, progress) }
        transfer.onComplete = { [weak self] transfer, code in
            guard let self else { return }
            finish(operation, self.result(of: transfer, code: code, request: request))
        }
        let host = request.url.host ?? ""
        let multiplexes = request.url.scheme?.lowercased() == "https"
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
            var hash: UInt32 = 2_166_136_261 // FNV-1a: the same host always lands on the same engine
            for byte in host.lowercased().utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
            return Int(hash % UInt32(loads.count))
        }
        return loads.indices.min { loads[$0] < loads[$1] }!
    }

    private func deliverProgress(of operation: Operation, _ progress: ImageLoadProgress) {
        let callbacks = state.withLock { _ in operation.subscribers.values.compactMap(\.progress) }
        guard !callbacks.isEmpty else { return }
        configuration.callbackQueue.async { for callback in callbacks { callback(progress) } }
    }

    private func snapshot(key: String) -> Data? {
        let transfer = state.withLock { $0.operations[key]?.transfer }
        return transfer?.bodySnapshot()
    }

    /// Ends a transfer: every remaining caller gets `result`, and the next waiting one starts.
    private func finish(_ operation: Operation, _ result: Result<ImageLoadResponse, ImageError>) {
        let subscribers = state.withLock { state -> [Subscriber] in
            if state.operations[operation.key] === operation { state.operations[operation.key] = nil }
            state.running -= 1
            if let engine = operation.engine { state.engineLoads[engine] -= 1 }
            operation.engine = nil
            operation.transfer = nil
            defer { operation.subscribers = [:] }
            return Array(operation.subscribers.values)
        }
        deliver(result, to: subscribers)
        pump()
    }

    private func cancel(key: String, id: Int) {
        let outcome = state.withLock { state -> (Subscriber?, (CurlTransfer, Int)?) in
            guard let operation = state.operations[key], let subscriber = operation.subscribers.removeValue(forKey: id) else {
                return (nil, nil)
            }
            guard operation.subscribers.isEmpty else { return (subscriber, nil) }
            // The last caller left: drop a waiting transfer, abort a running one.
            state.operations[key] = nil
            if operation.isWaiting {
                state.waiting.remove(operation)
                return (subscriber, nil)
            }
            guard let transfer = operation.transfer, let engine = operation.engine else { return (subscriber, nil) }
            return (subscriber, (transfer, engine))
        }
        guard let subscriber = outcome.0 else { return }
        deliver(.failure(ImageError(.cancelled, "the download was cancelled")), to: [subscriber])
        if let (transfer, engine) = outcome.1 { engines[engine].send(.cancel(transfer)) }
    }

    // MARK: Results

    private func result(of transfer: CurlTransfer, code: CURLcode, request: ImageLoadRequest) -> Result<ImageLoadResponse, ImageError> {
        let url = request.url
        if code != CURLE_OK {
            if transfer.exceededMaxBody || code == CURLE_FILESIZE_EXCEEDED {
                return .failure(ImageError(.responseTooLarge, "\(url): the body is over \(configuration.maxBodySize ?? 0) bytes"))
            }
            return .failure(Self.error(for: code, message: transfer.errorMessage, url: url))
        }
        let status = transfer.statusCode
        let headers = transfer.responseHeaders
        let metrics = transfer.metrics
        if status == 304, request.cachedValidators != nil {
            return .success(ImageLoadResponse(url: url, data: Data(), statusCode: 304, headers: headers, isNotModified: true, metrics: metrics))
        }
        guard configuration.acceptableStatusCodes.contains(status) else {
            return .failure(ImageError(.invalidStatusCode, "\(url): HTTP \(status)", httpStatusCode: status))
        }
        if let validator = configuration.responseValidator, !validator(status, headers) {
            return .failure(ImageError(.invalidResponse, "\(url): the response validator refused the response"))
        }
        if let acceptable = configuration.acceptableContentTypes {
            let type = headers["content-type"]?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard acceptable.contains(type) else {
                return .failure(ImageError(.invalidContentType, "\(url): Content-Type '\(type)' is not acceptable"))
            }
        }
        var data = transfer.takeBody()
        guard !data.isEmpty else { return .failure(ImageError(.invalidResponse, "\(url): the body is empty")) }
        if let decryptor = configuration.decryptor {
            guard let decrypted = decryptor(data, headers) else {
                return .failure(ImageError(.invalidResponse, "\(url): the decryptor refused the data"))
            }
            data = decrypted
        }
        return .success(ImageLoadResponse(url: url, data: data, statusCode: status, headers: headers, metrics: metrics))
    }

    /// curl's error codes as ImageKit's (ERR-08).
    static func error(for code: CURLcode, message: String, url: URL) -> ImageError {
        let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        switch code {
        case CURLE_ABORTED_BY_CALLBACK: return ImageError(.cancelled, "\(url): cancelled")
        case CURLE_OPERATION_TIMEDOUT: return ImageError(.timedOut, "\(url): \(text)")
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return ImageError(.cannotFindHost, "\(url): \(text)")
        case CURLE_COULDNT_CONNECT: return ImageError(.cannotConnect, "\(url): \(text)")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return ImageError(.connectionLost, "\(url): \(text)")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE:
            return ImageError(.secureConnectionFailed, "\(url): \(text)")
        case CURLE_TOO_MANY_REDIRECTS: return ImageError(.invalidResponse, "\(url): \(text)")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: return ImageError(.invalidURL, "\(url): \(text)")
        default: return ImageError(.networkError, "\(url): \(text) (curl error \(code.rawValue))")
        }
    }
}
