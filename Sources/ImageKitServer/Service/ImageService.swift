import Crypto
import Foundation
import HTTPTypes
import ImageKit
import Tracing

/// The image service without its HTTP framework: a swift-http-types `HTTPRequest` in, an
/// ``ImageServiceResponse`` out. The Hummingbird layer (`ImageServiceRoutes`) and tests call
/// ``handle(_:)``.
///
/// A request is parsed and admitted (signature in constant time, expiry, allowed source), then
/// answered from the result cache, or its source is fetched (private addresses refused) and
/// processed on the bounded worker pool, one job per result however many ask for it; a full pool
/// answers 503. `docs/Architecture.md` follows one request through these steps.
///
/// ```swift
/// var configuration = ImageServiceConfiguration()
/// configuration.allowsUnsafe = true
/// let service = try ImageService(configuration: configuration)
/// let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/unsafe/fit-in/256x256/example.com/a.jpg")
/// let response = await service.handle(request)
/// ```
public final class ImageService: Sendable {
    /// The settings the service was made with.
    public let configuration: ImageServiceConfiguration
    let sources: SourceFetcher
    let processor: ImageProcessor
    let pool: WorkerPool
    private let thumbor: ThumborSigner?
    private let imgproxy: ImgproxySigner?
    let results: ResultCache
    private let sourceDisk: DiskCache?
    let metrics: ServiceMetrics
    let inFlight = Locked<[String: Task<Result<ProcessedImage, ImageServiceError>, Never>]>([:])
    /// Requests between their result-cache miss and their answer, by result key, with the place
    /// in the worker pool their work will run in until that work starts (``claimPlace(for:)``).
    let resultsInFlight = Locked<[String: (requests: Int, place: WorkerPool.Reservation?)]>([:])
    private let parsedPaths = Locked<[String: ParsedPath]>([:])
    /// The admin key's MAC under a secret of this process: a presented key is checked by
    /// ``HMAC/isValidAuthenticationCode`` (constant time, whatever its length).
    let adminTag: Data?
    /// The fleet's front caches, told to drop a purged source's keys; nil without `purgeNotify`.
    let frontCaches: FrontCachePurger?
    let purgesInFlight = Locked<[String: Task<Data, Never>]>([:])
    static let adminSecretBytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
    static var adminSecret: SymmetricKey { SymmetricKey(data: adminSecretBytes) }

    /// A service; throws when no signing key is set and unsigned URLs are not allowed, or a setting is invalid.
    public init(configuration: ImageServiceConfiguration) throws(ImageServiceError) {
        self.configuration = configuration
        thumbor = configuration.thumborKeys.isEmpty ? nil : ThumborSigner(keys: configuration.thumborKeys)
        imgproxy = configuration.imgproxyKeys.isEmpty ? nil : try ImgproxySigner(pairs: configuration.imgproxyKeys)
        guard thumbor != nil || imgproxy != nil || configuration.allowsUnsafe else {
            throw ImageServiceError(.noKeys, "no signing key is set and unsigned URLs are not allowed")
        }
        for network in configuration.allowedNetworks where IPNetwork(network) == nil {
            throw ImageServiceError(.invalidNetwork, "'\(network)' is not an address or CIDR")
        }
        var downloads = ImageDownloaderConfiguration(
            totalTimeout: configuration.timeout, maxBodySize: configuration.maxSourceBytes,
            maxRedirects: configuration.maxRedirects,
            retryPolicy: ImageRetryPolicy(maxRetries: 2, baseDelay: 0.1, maxDelay: 1, maxRetryAfter: 2),
            addressPolicy: AddressPolicy.publicOnly.allowing(networks: configuration.allowedNetworks))
        downloads.connectTimeout = min(configuration.timeout, 5)
        downloads.hostOverrides = configuration.hostOverrides
        downloads.allowedHosts = configuration.allowedSources
        // Sources get three quarters of the disk budget, results the rest.
        let diskLimit = configuration.diskLimitBytes
        if let directory = configuration.cacheDirectory {
            do {
                sourceDisk = try DiskCache(
                    directory: directory.appendingPathComponent("sources"),
                    configuration: DiskCacheConfiguration(
                        maxSize: diskLimit.map { max(1, $0 / 4 * 3) } ?? DiskCacheConfiguration.automaticMaxSize))
            } catch {
                throw ImageServiceError(.cacheUnavailable, "cannot open the cache directory")
            }
        } else {
            sourceDisk = nil
        }
        sources = SourceFetcher(
            loaders: configuration.sourceLoaders(through: ImageDownloader(configuration: downloads)), disk: sourceDisk)
        var processor = ImageProcessor(
            maxPixels: configuration.maxPixels, videoThumbnailSecond: configuration.videoThumbnailSecond)
        processor.autoQuality = configuration.autoQuality
        self.processor = processor
        let metrics = ServiceMetrics()
        self.metrics = metrics
        pool = WorkerPool(
            width: configuration.workers, queueLimit: configuration.queueLimit, onWait: { metrics.waited($0) })
        results = ResultCache(
            memoryBytes: configuration.resultMemoryBytes,
            directory: configuration.cacheDirectory?.appendingPathComponent("results"),
            diskLimit: diskLimit.map { max(1, $0 / 4) }, timeToLive: configuration.resultTimeToLive,
            purgeLog: configuration.cacheDirectory?.appendingPathComponent("purges.tsv"))
        frontCaches = configuration.purgeNotify.isEmpty ? nil : FrontCachePurger(endpoints: configuration.purgeNotify)
        adminTag = configuration.adminKey.map { key in
            HMAC<SHA256>.authenticationCode(for: Data(key.utf8), using: Self.adminSecret).withUnsafeBytes { Data($0) }
        }
    }

    /// Answers one request (GET or HEAD; another method is 405). Never throws: every failure
    /// is a status and a JSON body (``ImageServiceError``).
    ///
    /// ```swift
    /// let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/unsafe/300x200/example.com/a.jpg")
    /// let response = await service.handle(request)
    /// response.status   // .ok
    /// ```
    ///
    /// Each request is a server span (ImageKit's `ImageKitTracing`): a child of `ServiceContext.current`
    /// when the caller has one, else of the request's `traceparent`, else a new trace.
    public func handle(_ request: HTTPRequest) async -> ImageServiceResponse {
        var parent = ServiceContext.current ?? .topLevel
        if ServiceContext.current == nil {
            InstrumentationSystem.instrument.extract(request.headerFields, into: &parent, using: HTTPFieldsExtractor())
        }
        return await ImageKitTracing.span(request.method.rawValue, context: parent, ofKind: .server) { span in
            let response = await serve(request)
            guard span.isRecording else { return response }
            span.updateAttributes { attributes in
                attributes["http.request.method"] = request.method.rawValue
                attributes["url.path"] = Self.loggablePath(request.path ?? "/")
                attributes["http.response.status_code"] = response.status.code
                if let grammar = response.grammar { attributes["imagekit.grammar"] = grammar.rawValue }
                if let tier = response.cacheTier { attributes["imagekit.cache_tier"] = tier.rawValue }
            }
            if response.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
            return response
        }
    }

    private func serve(_ request: HTTPRequest) async -> ImageServiceResponse {
        let started = ContinuousClock.now
        metrics.requestStarted()
        let path = request.path ?? "/"
        let trace = RequestTrace()
        var response: ImageServiceResponse
        do throws(ImageServiceError) {
            guard request.method == .get || request.method == .head else {
                throw ImageServiceError(.methodNotAllowed, "only GET and HEAD are served")
            }
            response = try await answer(path: path, headers: request.headerFields, trace: trace)
        } catch {
            response = .error(error)
        }
        // HEAD keeps the headers a GET would have sent, Content-Length included.
        if request.method == .head { response.body = Data() }
        response.grammar = trace.grammar
        response.cacheTier = trace.tier
        if let frontCaches, response.status == .ok, let source = trace.source {
            frontCaches.record(source: source, path: path, accept: request.headerFields[.accept])
        }
        if let tier = trace.tier, response.status == .ok || response.status == .notModified {
            metrics.served(from: tier)
        }
        metrics.queueLength(pool.waitingCount)
        metrics.requestFinished(
            grammar: trace.grammar?.rawValue ?? "none", status: response.status.code,
            duration: ContinuousClock.now - started)
        return response
    }

    /// Records the gauges that are read rather than counted (queue length, resident memory):
    /// `/metrics` calls it before each scrape.
    public func refreshGauges() {
        metrics.queueLength(pool.waitingCount)
        metrics.residentMemory()
    }

    /// Waits for the caches' background disk work: call it before the process exits.
    public func flush() {
        results.flush()
        sourceDisk?.waitForBackgroundWork()
    }

    /// `path` as the access log shows it: a signature in the first segment is replaced by `-`
    /// (`unsafe`, `insecure` and `_` are kept), and the query is dropped.
    public static func loggablePath(_ path: String) -> String {
        let rawPath = withoutQuery(path)
        let bytes = rawPath.utf8
        guard bytes.first == UInt8(ascii: "/") else { return String(rawPath) }
        let firstStart = bytes.index(after: bytes.startIndex)
        guard let firstEnd = bytes[firstStart...].firstIndex(of: UInt8(ascii: "/")) else { return String(rawPath) }
        let first = rawPath[firstStart..<firstEnd]
        if first == "unsafe" || first == "insecure" || first == "_" { return String(rawPath) }
        return "/-" + rawPath[firstEnd...]
    }

    /// `path` up to its first `?`. Searched as bytes: a `Character` split walks grapheme
    /// clusters, which cost a result-cache hit several percent of its CPU.
    static func withoutQuery(_ path: String) -> Substring {
        path.utf8.firstIndex(of: UInt8(ascii: "?")).map { path[..<$0] } ?? path[...]
    }

    /// Parse and admit (signature, expiry, allowed source), then a result from the result
    /// cache, or the source's bytes and a result made from them.
    private func answer(path: String, headers: HTTPFields, trace: RequestTrace) async throws(ImageServiceError)
        -> ImageServiceResponse
    {
        var parsedPath = try admit(path, trace: trace)
        if readsClientHints(parsedPath.request) { parsedPath = hinted(parsedPath, headers) }
        let request = parsedPath.request
        let now = Int(Date().timeIntervalSince1970)
        if request.operations.metadataOnly { return try await metadata(request, trace: trace, now: now) }
        let negotiation = Negotiation(request.operations, accept: headers[.accept], configuration: configuration)
        let resultKey = parsedPath.key + "|" + negotiation.formatClass
        let answering = Answering(
            request: request, tag: parsedPath.tag, negotiable: negotiation.negotiable,
            ifNoneMatch: headers[.ifNoneMatch], now: now)

        let stale: CachedResult?
        let lookup = withSpan("imagekit.result_cache.lookup") { _ in results.get(resultKey, source: parsedPath.source) }
        switch lookup {
        case .fresh(let hit, let tier):
            trace.tier = tier
            return respond(with: hit, answering)
        case .stale(let entry): stale = entry
        case .miss: stale = nil
        }

        // A conditional request may end in a 304 that needs the source but no worker (a CDN
        // revalidating): it takes its place only if it turns out to need processing.
        let claimsPlace = answering.ifNoneMatch == nil
        if claimsPlace { try claimPlace(for: resultKey) }
        defer { if claimsPlace { releasePlace(for: resultKey) } }
        let source = try await loadSource(request.source, trace: trace)
        let signature = source.signature
        let etag = "\"" + SHA256.hash(data: Data((resultKey + "|" + source.identity).utf8)).prefix(16).hexString + "\""
        let expiry = Date().addingTimeInterval(configuration.resultTimeToLive)
        if let stale, stale.etag == etag {
            // The source has not changed since the result was made: it stands for another period.
            let renewed = CachedResult(
                image: stale.image, etag: etag, lastModified: source.lastModified, expires: expiry)
            results.set(resultKey, renewed)
            return respond(with: renewed, answering)
        }
        if Self.matches(answering.ifNoneMatch, etag) {
            let varies = negotiation.negotiable && Self.negotiates(request, signature)
            return ImageServiceResponse(
                status: .notModified,
                headerFields: validators(
                    etag: etag, lastModified: source.lastModified, varies: varies,
                    hinted: readsClientHints(request), answering.request.operations,
                    now: now))
        }
        let processed = try await makeResult(
            request, from: source, negotiation: negotiation, key: resultKey + "|" + source.identity,
            placeKey: claimsPlace ? resultKey : nil, trace: trace)
        let result = CachedResult(image: processed, etag: etag, lastModified: source.lastModified, expires: expiry)
        results.set(resultKey, result)
        return respond(with: result, answering)
    }

    /// A new result from the source's bytes: in the format `Accept` chose, with the watermarks
    /// fetched, joined with identical work in flight or run on the pool.
    private func makeResult(
        _ request: ImageRequest, from source: Source, negotiation: Negotiation, key: String, placeKey: String?,
        trace: RequestTrace
    ) async throws(ImageServiceError) -> ProcessedImage {
        var effective = request
        if let offered = negotiation.offered, Self.negotiates(request, source.signature) {
            effective.operations.format = offered
        }
        effective.operations.bestCandidates = negotiation.bestCandidates
        let watermarks = try await loadWatermarks(request.operations, trace: trace)
        return try await process(
            source.data, signature: source.signature, request: effective, watermarks: watermarks, key: key,
            placeKey: placeKey)
    }

    /// The path read and let in: a valid signature (or unsigned URLs allowed), not expired, a
    /// source the configuration serves.
    private func admit(_ path: String, trace: RequestTrace) throws(ImageServiceError) -> ParsedPath {
        let rawPath = String(Self.withoutQuery(path))
        let parsedPath = try parsed(rawPath)
        trace.grammar = parsedPath.request.grammar
        trace.source = parsedPath.source
        try authorize(parsedPath.request)
        if let expires = parsedPath.request.operations.expires, expires <= Int(Date().timeIntervalSince1970) {
            throw ImageServiceError(.expired, "the URL has expired")
        }
        guard parsedPath.isAllowed else {
            throw ImageServiceError(.sourceNotAllowed, "this source host is not allowed")
        }
        return parsedPath
    }

    /// `/meta/` and `/info/`: the source's facts and the planned size as JSON.
    private func metadata(_ request: ImageRequest, trace: RequestTrace, now: Int) async throws(ImageServiceError)
        -> ImageServiceResponse
    {
        guard let place = pool.reserve() else { throw ImageServiceError(.busy, "the service is busy; try again") }
        let source = try await loadSource(request.source, trace: trace)
        let processor = self.processor
        let body = try await runOnPool(reservation: place) { () throws(ImageServiceError) -> Data in
            try processor.metadata(source.data, request: request)
        }
        return .json(.ok, body, cacheControl: cacheControl(request.operations, now: now))
    }

    /// `parsedPath` with the request's client hints as its defaults (the result key follows).
    private func hinted(_ parsedPath: ParsedPath, _ headers: HTTPFields) -> ParsedPath {
        let hints = ClientHints { name in HTTPField.Name(name).flatMap { headers[$0] } }
        let request = parsedPath.request.applying(hints)
        guard request.operations != parsedPath.request.operations else { return parsedPath }
        var hinted = parsedPath
        hinted.request = request
        hinted.key = effectiveKey(request.operations) + "|" + parsedPath.source
        return hinted
    }

    /// The path read: from a memo of recent paths, since a CDN asks the same URLs again and
    /// parsing is most of a result-cache hit's work. Only paths that parsed are kept (errors are
    /// cheap to find again and are not worth the memory).
    private func parsed(_ path: String) throws(ImageServiceError) -> ParsedPath {
        if let hit = parsedPaths.withLock({ $0[path] }) { return hit }
        var request = try ImageRequest.parse(path: path, presets: configuration.presets)
        request.source = try sources.resolve(request.source)
        let source = request.source.absoluteString
        let entry = ParsedPath(
            request: request, key: effectiveKey(request.operations) + "|" + source, source: source,
            tag: Self.surrogateKey(source), isAllowed: sources.allows(request.source))
        parsedPaths.withLock { paths in
            if paths.count >= 4096 { paths.removeAll(keepingCapacity: true) }  // a few MB at most
            paths[path] = entry
        }
        return entry
    }

    /// The canonical key without what only shapes the response's headers (a cache buster stays:
    /// it is there to get a fresh result).
    private func effectiveKey(_ operations: ImageOperations) -> String {
        var keyed = operations
        keyed.maxAge = nil
        keyed.expires = nil
        keyed.filename = nil
        keyed.returnAttachment = false
        return keyed.canonicalKey
    }

    /// A signed URL must carry a valid signature for its grammar; an unsigned one needs `allowsUnsafe`.
    private func authorize(_ request: ImageRequest) throws(ImageServiceError) {
        guard let signature = request.signature else {
            guard configuration.allowsUnsafe else {
                throw ImageServiceError(.unsignedURL, "unsigned URLs are not allowed")
            }
            return
        }
        guard request.isSigned(with: signature, thumbor: thumbor, imgproxy: imgproxy) else {
            throw ImageServiceError.badSignature("the URL's signature does not match")
        }
    }
}

/// One request's facts for the metrics and the access log, filled in as it is answered.
final class RequestTrace {
    var grammar: ImageRequest.Grammar?
    var source: String?
    var tier: ImageServiceCacheTier?
}

/// Reads propagation headers (`traceparent`, `tracestate`) from a request's fields.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}
