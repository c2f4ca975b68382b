import Crypto
import Foundation
import ImageKit

/// The image service without its HTTP framework: a request's method, path and headers in, an
/// ``ImageServiceResponse`` out. The Hummingbird layer (and tests) call ``handle(method:path:headers:)``.
///
/// One request: parse (either grammar, memoised per path) → signature (constant time) → expiry,
/// allowed source → the result cache, keyed by the canonical operations, the source URL and the
/// class of client (`Accept`), which answers a hit without touching the source → on a miss or
/// once the result's time to live is over, the source's bytes through an `ImageManager`
/// (disk-cached and revalidated, private addresses refused after DNS and on every redirect, size
/// and time limits) → `ETag` from the source's identity (its strong `ETag`, else a digest of its
/// bytes), the canonical operations and the format, so `If-None-Match` answers 304 with nothing
/// decoded → one joined job per result on the bounded worker pool (full: 503 + `Retry-After`) →
/// headers (`Cache-Control`, `Last-Modified`, `Vary: Accept`, `Content-Disposition`).
///
/// ```swift
/// var configuration = ImageServiceConfiguration()
/// configuration.allowsUnsafe = true
/// let service = try ImageService(configuration: configuration)
/// let response = await service.handle(method: "GET", path: "/unsafe/fit-in/256x256/example.com/a.jpg", headers: [:])
/// ```
public final class ImageService: Sendable {
    /// The settings the service was made with.
    public let configuration: ImageServiceConfiguration
    let sources: SourceFetcher
    let processor: ImageProcessor
    let pool: WorkerPool
    private let thumbor: ThumborSigner?
    private let imgproxy: ImgproxySigner?
    private let results: ResultCache
    private let sourceDisk: DiskCache?
    private let metrics: ServiceMetrics
    private let inFlight = Locked<[String: Task<Result<ProcessedImage, ImageServiceError>, Never>]>([:])
    private let parsedPaths = Locked<[String: (ImageRequest, String)]>([:])
    /// The admin key's MAC under a secret of this process: a presented key is checked by
    /// ``HMAC/isValidAuthenticationCode`` (constant time, whatever its length).
    private let adminTag: Data?
    /// The fleet's front caches, told to drop a purged source's keys; nil without `purgeNotify`.
    private let frontCaches: FrontCachePurger?
    private let purgesInFlight = Locked<[String: Task<Data, Never>]>([:])
    private static let adminSecretBytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
    private static var adminSecret: SymmetricKey { SymmetricKey(data: adminSecretBytes) }

    /// A service; throws when no signing key is set and unsigned URLs are not allowed, or a setting is invalid.
    public init(configuration: ImageServiceConfiguration) throws(ImageServiceError) {
        self.configuration = configuration
        thumbor = configuration.thumborKeys.isEmpty ? nil : ThumborSigner(keys: configuration.thumborKeys)
        imgproxy = configuration.imgproxyKeys.isEmpty ? nil : try ImgproxySigner(pairs: configuration.imgproxyKeys)
        guard thumbor != nil || imgproxy != nil || configuration.allowsUnsafe else {
            throw ImageServiceError(500, code: "noKeys", "no signing key is set and unsigned URLs are not allowed")
        }
        for network in configuration.allowedNetworks where IPNetwork(network) == nil {
            throw ImageServiceError(500, code: "invalidNetwork", "'\(network)' is not an address or CIDR")
        }
        var downloads = ImageDownloaderConfiguration(
            totalTimeout: configuration.timeout, maxBodySize: configuration.maxSourceBytes,
            maxRedirects: configuration.maxRedirects,
            retryPolicy: ImageRetryPolicy(maxRetries: 2, baseDelay: 0.1, maxDelay: 1, maxRetryAfter: 2),
            addressPolicy: AddressPolicy.publicOnly.allowing(networks: configuration.allowedNetworks))
        downloads.connectTimeout = min(configuration.timeout, 5)
        downloads.hostOverrides = configuration.hostOverrides
        downloads.s3 = configuration.s3
        // Sources get three quarters of the disk budget, results the rest.
        let diskLimit = configuration.diskLimitBytes
        if let directory = configuration.cacheDirectory {
            do {
                sourceDisk = try DiskCache(
                    directory: directory.appendingPathComponent("sources"),
                    configuration: DiskCacheConfiguration(
                        maxSize: diskLimit.map { max(1, $0 / 4 * 3) } ?? DiskCacheConfiguration.automaticMaxSize))
            } catch {
                throw ImageServiceError(500, code: "cacheUnavailable", "cannot open the cache directory")
            }
        } else {
            sourceDisk = nil
        }
        sources = SourceFetcher(
            downloader: ImageDownloader(configuration: downloads), disk: sourceDisk,
            local: configuration.localRoot.map { LocalRootLoader(root: $0, maxBytes: configuration.maxSourceBytes) })
        processor = ImageProcessor(maxPixels: configuration.maxPixels)
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

    /// Answers one request. Never throws: every failure is a status and a JSON body.
    public func handle(method: String, path: String, headers: [String: String]) async -> ImageServiceResponse {
        let started = ContinuousClock.now
        metrics.requestStarted()
        let isHead = method.uppercased() == "HEAD"
        let trace = RequestTrace()
        var response: ImageServiceResponse
        do throws(ImageServiceError) {
            guard ["GET", "HEAD"].contains(method.uppercased()) else {
                throw ImageServiceError(405, code: "methodNotAllowed", "only GET and HEAD are served")
            }
            response = try await answer(path: path, headers: Self.lowercased(headers), trace: trace)
        } catch {
            response = .error(error)
        }
        if isHead { response.body = Data() }
        response.grammar = trace.grammar
        response.cacheTier = trace.tier
        if let frontCaches, response.status == 200, let source = trace.source {
            frontCaches.record(source: source, path: path, accept: headers["Accept"] ?? headers["accept"])
        }
        if let tier = trace.tier, response.status == 200 || response.status == 304 { metrics.served(from: tier) }
        metrics.queueLength(pool.waitingCount)
        metrics.requestFinished(
            grammar: trace.grammar?.rawValue ?? "none", status: response.status,
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

    static func lowercased(_ headers: [String: String]) -> [String: String] {
        Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// `path` as the access log shows it: a signature in the first segment is replaced by `-`
    /// (`unsafe`, `insecure` and `_` are kept), and the query is dropped.
    public static func loggablePath(_ path: String) -> String {
        let rawPath =
            path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        var segments = rawPath.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count > 2, segments[0].isEmpty else { return rawPath }
        if !["unsafe", "insecure", "_"].contains(segments[1]) { segments[1] = "-" }
        return segments.joined(separator: "/")
    }

    /// `POST /admin/purge`: forgets one source on this node — its bytes in the source cache, its
    /// results in memory (listed in the answer), and every result of it on disk, which is
    /// revalidated against the source (fetched again) before it is served.
    ///
    /// With ``ImageServiceConfiguration/purgeNotify``, the fleet's front caches are then asked
    /// to drop every key this node answered for the source (`frontCacheKeys`, and how many they
    /// held: `frontCacheRemoved`).
    ///
    /// - Parameters:
    ///   - body: JSON `{"source": "…"}`: the source as a URL names it (`https://…`, thumbor's bare
    ///     `host/path`, `s3://…`, `local:///…`).
    ///   - query: the request's query; `source=` there is used when the body has none (a front
    ///     door hashes on it to reach the node that owns the source).
    ///   - authorization: the `Authorization` header: `Bearer ADMIN_KEY`.
    /// - Returns: 200 with `{"source", "dropped", "tag"}` (`tag`: the `Surrogate-Key` its images
    ///   carry, for a CDN purge); 404 without ``ImageServiceConfiguration/adminKey``; 403 for a
    ///   missing or wrong key (nothing else said); 400 for a request without a usable source.
    ///
    /// ```sh
    /// curl -X POST -H "Authorization: Bearer $KEY" -d '{"source":"https://img.example.com/a.jpg"}' \
    ///     http://127.0.0.1:8080/admin/purge
    /// ```
    public func purge(body: Data, query: String? = nil, authorization: String?) async -> ImageServiceResponse {
        guard let adminTag else {
            return .error(ImageServiceError(404, code: "notFound", "no such route"))
        }
        let presented = authorization.flatMap { value -> String? in
            let parts = value.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : nil
        }
        guard let presented,
            HMAC<SHA256>.isValidAuthenticationCode(
                adminTag, authenticating: Data(presented.utf8), using: Self.adminSecret)
        else {
            return .error(ImageServiceError(403, code: "forbidden", "not allowed"))
        }
        let fromBody = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["source"] as? String
        let fromQuery = query.flatMap { query in
            query.split(separator: "&").lazy.compactMap { pair -> String? in
                guard pair.hasPrefix("source=") else { return nil }
                let value = String(pair.dropFirst(7))
                return value.removingPercentEncoding ?? value
            }.first
        }
        guard let text = fromBody ?? fromQuery, !text.isEmpty else {
            return .error(ImageServiceError(400, code: "malformedPurge", #"no source: send {"source": "…"}"#))
        }
        let source: URL
        do {
            source = try ImageRequest.sourceURL(text, addsScheme: true)
        } catch {
            return .error(error)
        }
        // Purges of one source that arrive together (a fleet's front door sends the owner its
        // copy twice: the request and the broadcast) are one purge: each answers when it is done.
        let (task, started) = purgesInFlight.withLock { running -> (Task<Data, Never>, Bool) in
            if let task = running[source.absoluteString] { return (task, false) }
            let task = Task { await self.forget(source) }
            running[source.absoluteString] = task
            return (task, true)
        }
        let json = await task.value
        if started { purgesInFlight.withLock { _ = $0.removeValue(forKey: source.absoluteString) } }
        return ImageServiceResponse(
            status: 200,
            headers: [
                ("Content-Type", "application/json"), ("Content-Length", String(json.count)),
                ("Cache-Control", "no-store"),
            ], body: json)
    }

    /// Drops `source` from every tier this node has, then from the front caches; the answer's JSON.
    private func forget(_ source: URL) async -> Data {
        var dropped: [String] = []
        if let key = sources.purge(source) { dropped.append("source:" + key) }
        dropped += results.purge(source: source.absoluteString).map { "result:" + $0 }
        metrics.purged()
        var answer: [String: Any] = [
            "source": source.absoluteString, "dropped": dropped, "tag": Self.surrogateKey(source.absoluteString),
        ]
        if let frontCaches {
            let (keys, removed) = await frontCaches.purge(source: source.absoluteString)
            answer["frontCacheKeys"] = keys
            answer["frontCacheRemoved"] = removed
        }
        return (try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// The tag every image of `source` carries in `Surrogate-Key` (Fastly) and `Cache-Tag`
    /// (Cloudflare), so a CDN purges all its variants by one tag.
    static func surrogateKey(_ source: String) -> String {
        "imagekit-src-" + SHA256.hash(data: Data(source.utf8)).prefix(12).hexString
    }

    private func answer(path: String, headers: [String: String], trace: RequestTrace) async throws(ImageServiceError)
        -> ImageServiceResponse
    {
        let rawPath = String(path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        let (request, operationsKey) = try parsed(rawPath)
        trace.grammar = request.grammar
        trace.source = request.source.absoluteString
        try authorize(request)
        let operations = request.operations
        let now = Int(Date().timeIntervalSince1970)
        if let expires = operations.expires, expires <= now {
            throw ImageServiceError(404, code: "expired", "the URL has expired")
        }
        guard allows(request.source) else {
            throw ImageServiceError(403, code: "sourceNotAllowed", "this source host is not allowed")
        }

        if operations.metadataOnly {
            let source = try await loadSource(request.source, trace: trace)
            let processor = self.processor
            let body = try await runOnPool { () throws(ImageServiceError) -> Data in
                try processor.metadata(source.data, request: request)
            }
            return ImageServiceResponse(
                status: 200,
                headers: [
                    (name: "Content-Type", value: "application/json"),
                    (name: "Content-Length", value: String(body.count)),
                    (name: "Cache-Control", value: cacheControl(operations, now: now)),
                ], body: body)
        }
        // The format asked, or the class of client (what its Accept allows): results are kept per
        // class, so a result hit needs neither the source nor a decode.
        let accept = headers["accept"]?.lowercased() ?? ""
        let negotiable = operations.format == nil && (configuration.autoWebP || configuration.autoAVIF)
        var offered: ImageOperations.Format?
        if negotiable {
            // A build without AVIF (the trait off) offers WebP instead of answering 415.
            if configuration.autoAVIF, ImageFormat.avif.isCodecSupported, accept.contains("image/avif") {
                offered = .avif
            } else if configuration.autoWebP, accept.contains("image/webp") {
                offered = .webp
            }
        }
        let formatClass = operations.format.map { $0.rawValue } ?? "auto:" + (offered?.rawValue ?? "none")
        let resultKey = operationsKey + "|" + formatClass

        let stale: CachedResult?
        switch results.get(resultKey, source: request.source.absoluteString) {
        case .fresh(let hit, let tier):
            trace.tier = tier
            return respond(with: hit, request: request, negotiable: negotiable, headers: headers, now: now)
        case .stale(let entry): stale = entry
        case .miss: stale = nil
        }

        let source = try await loadSource(request.source, trace: trace)
        let signature = ImageSignature(source.data)
        var effective = request
        if let offered, Self.negotiates(request, signature) { effective.operations.format = offered }
        let sourceIdentity = source.identity
        let etag = "\"" + SHA256.hash(data: Data((resultKey + "|" + sourceIdentity).utf8)).prefix(16).hexString + "\""
        let expiry = Date().addingTimeInterval(configuration.resultTimeToLive)
        if let stale, stale.etag == etag {
            // The source has not changed since the result was made: it stands for another period.
            let renewed = CachedResult(
                image: stale.image, etag: etag, lastModified: source.lastModified, expires: expiry)
            results.set(resultKey, renewed)
            return respond(with: renewed, request: request, negotiable: negotiable, headers: headers, now: now)
        }
        if Self.matches(headers["if-none-match"], etag) {
            let varies = negotiable && Self.negotiates(request, signature)
            return ImageServiceResponse(
                status: 304,
                headers: validators(
                    etag: etag, lastModified: source.lastModified, varies: varies,
                    operations: operations, now: now))
        }
        let watermarks = try await loadWatermarks(operations, trace: trace)
        let processed = try await process(
            source.data, request: effective, watermarks: watermarks, key: resultKey + "|" + sourceIdentity)
        let result = CachedResult(image: processed, etag: etag, lastModified: source.lastModified, expires: expiry)
        results.set(resultKey, result)
        return respond(with: result, request: request, negotiable: negotiable, headers: headers, now: now)
    }

    /// The path read, and its result key without the format: from a memo of recent paths, since a
    /// CDN asks the same URLs again and parsing is most of a result-cache hit's work. Only
    /// paths that parsed are kept (errors are cheap to find again and are not worth the memory).
    private func parsed(_ path: String) throws(ImageServiceError) -> (ImageRequest, String) {
        if let hit = parsedPaths.withLock({ $0[path] }) { return hit }
        let request = try ImageRequest.parse(path: path, presets: configuration.presets)
        let entry = (request, effectiveKey(request.operations) + "|" + request.source.absoluteString)
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

    /// Whether `Accept` may choose the format of this source's answer (when no format is
    /// asked). imgproxy's rule: for every source, animations too (an animated GIF becomes an
    /// animated WebP or AVIF). thumbor's: not for a GIF or an animation, which keep their format.
    static func negotiates(_ request: ImageRequest, _ signature: ImageSignature) -> Bool {
        request.operations.rules.negotiatesAnimations || (!signature.isAnimated && signature.format != .gif)
    }

    static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        return ifNoneMatch.split(separator: ",").contains {
            let tag = $0.trimmingCharacters(in: .whitespaces)
            return tag == etag || tag == "W/" + etag || tag == "*"
        }
    }

    /// The headers a 200 and a 304 of one result share.
    private func validators(
        etag: String, lastModified: String?, varies: Bool, operations: ImageOperations,
        now: Int
    ) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [
            ("ETag", etag), ("Cache-Control", cacheControl(operations, now: now)),
        ]
        if let lastModified { fields.append(("Last-Modified", lastModified)) }
        if varies { fields.append(("Vary", "Accept")) }
        return fields
    }

    /// A result's response: 304 when the client holds it already.
    private func respond(
        with result: CachedResult, request: ImageRequest, negotiable: Bool, headers: [String: String],
        now: Int
    ) -> ImageServiceResponse {
        let operations = request.operations
        // A thumbor GIF stays a GIF whatever Accept says: no Vary for it.
        let varies = negotiable && (operations.rules.negotiatesAnimations || result.image.format != .gif)
        let common = validators(
            etag: result.etag, lastModified: result.lastModified, varies: varies, operations: operations, now: now)
        if Self.matches(headers["if-none-match"], result.etag) {
            return ImageServiceResponse(status: 304, headers: common)
        }
        let processed = result.image
        let tag = Self.surrogateKey(request.source.absoluteString)
        var fields: [(String, String)] = [
            ("Content-Type", Self.mimeType(processed.format)), ("Content-Length", String(processed.data.count)),
            ("Surrogate-Key", tag), ("Cache-Tag", tag),
        ]
        fields += common.map { ($0.name, $0.value) }
        if operations.filename != nil || operations.returnAttachment {
            let name =
                (operations.filename ?? "image") + "." + (processed.format == .jpeg ? "jpg" : processed.format.rawValue)
            let safe = String(name.unicodeScalars.filter { $0.isASCII && $0 != "\"" && $0 != "\\" && $0.value >= 0x20 })
            fields.append(
                (
                    "Content-Disposition",
                    (operations.returnAttachment ? "attachment" : "inline") + "; filename=\"\(safe)\""
                ))
        }
        return ImageServiceResponse(
            status: 200, headers: fields.map { (name: $0.0, value: $0.1) }, body: processed.data)
    }

    /// A signed URL must carry a valid signature for its grammar; an unsigned one needs `allowsUnsafe`.
    private func authorize(_ request: ImageRequest) throws(ImageServiceError) {
        guard let signature = request.signature else {
            guard configuration.allowsUnsafe else {
                throw ImageServiceError(403, code: "unsignedURL", "unsigned URLs are not allowed")
            }
            return
        }
        let valid: Bool
        switch request.grammar {
        case .thumbor: valid = thumbor?.isValid(signature, for: request.signedPath) ?? false
        case .imgproxy: valid = imgproxy?.isValid(signature, for: request.signedPath) ?? false
        }
        guard valid else { throw ImageServiceError.badSignature("the URL's signature does not match") }
    }

    private func allows(_ source: URL) -> Bool {
        switch source.scheme?.lowercased() {
        case "s3":
            guard let s3 = configuration.s3 else { return false }
            return s3.buckets.map { $0.contains(source.host ?? "") } ?? true
        case "local": return configuration.localRoot != nil
        default: break
        }
        guard !configuration.allowedSources.isEmpty else { return true }
        let host = source.host?.lowercased() ?? ""
        return configuration.allowedSources.contains { pattern in
            let pattern = pattern.lowercased()
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) || host == pattern.dropFirst(2) }
            return host == pattern
        }
    }

    private func cacheControl(_ operations: ImageOperations, now: Int) -> String {
        var maxAge = operations.maxAge ?? configuration.maxAge
        if let expires = operations.expires { maxAge = min(maxAge, max(0, expires - now)) }
        return "public, max-age=\(maxAge)"
    }

    /// A source's bytes, the origin's `Last-Modified`, and what identifies this version of it:
    /// the origin's strong `ETag` with the length, else a digest of the bytes.
    struct Source {
        var data: Data
        var lastModified: String?
        var identity: String
    }

    /// The source's bytes (the source cache, else the origin: address policy, limits, deadline).
    private func loadSource(_ url: URL, trace: RequestTrace) async throws(ImageServiceError) -> Source {
        let started = ContinuousClock.now
        do {
            let fetched = try await sources.fetch(url)
            let data = fetched.data
            guard !data.isEmpty else {
                throw ImageServiceError(502, code: "emptySource", "the origin sent no bytes")
            }
            trace.tier = fetched.fromOrigin ? .origin : .sourceDisk
            metrics.fetched(bytes: data.count, duration: ContinuousClock.now - started, fromOrigin: fetched.fromOrigin)
            let headers = fetched.http
            // A strong ETag names the bytes exactly: no need to hash them (a weak one does not).
            let identity =
                headers?.etag.flatMap { $0.hasPrefix("\"") ? "etag:" + $0 + ":" + String(data.count) : nil }
                ?? SHA256.hash(data: data).prefix(12).hexString
            return Source(data: data, lastModified: headers?.lastModified, identity: identity)
        } catch let error as ImageServiceError {
            throw error
        } catch let error as ImageError {
            throw Self.originError(error)
        } catch {
            throw ImageServiceError(502, code: "originFailed", "the source could not be fetched")
        }
    }

    /// How a failure to fetch the source is answered (the status table in the README).
    static func originError(_ error: ImageError) -> ImageServiceError {
        switch error.code {
        case .invalidStatusCode where error.httpStatusCode == 404 || error.httpStatusCode == 410:
            return ImageServiceError(404, code: "sourceNotFound", "the origin answered \(error.httpStatusCode!)")
        case .invalidStatusCode:
            return ImageServiceError(
                502, code: "originFailed", "the origin answered \(error.httpStatusCode.map(String.init) ?? "an error")")
        case .timedOut: return ImageServiceError(504, code: "originTimeout", "the origin did not answer in time")
        case .forbiddenAddress:
            return ImageServiceError(
                403, code: "addressNotAllowed", "the source resolves to an address that is not allowed")
        case .responseTooLarge:
            return ImageServiceError(413, code: "sourceTooLarge", "the source is larger than the limit")
        case .invalidURL: return ImageServiceError(400, code: "invalidSource", "the source URL cannot be fetched")
        case .blacklisted:
            return ImageServiceError(404, code: "sourceNotFound", "the source failed permanently a moment ago")
        default: return ImageServiceError(502, code: "originFailed", "the source could not be fetched (\(error.code))")
        }
    }

    /// Each `watermark()` and `frame()` picture, fetched as a source is (allowed hosts, address policy, limits,
    /// the source cache); by the URL as the filter names it.
    private func loadWatermarks(_ operations: ImageOperations, trace: RequestTrace) async throws(ImageServiceError)
        -> [String: Data]
    {
        var watermarks: [String: Data] = [:]
        for filter in operations.filters {
            let text: String
            switch filter {
            case .watermark(let url, _, _, _, _, _), .frame(let url): text = url
            default: continue
            }
            guard watermarks[text] == nil else { continue }
            let url = try ImageRequest.sourceURL(text, addsScheme: true)
            guard allows(url) else {
                throw ImageServiceError(
                    403, code: "sourceNotAllowed", "the host of a watermark or frame is not allowed")
            }
            let tier = trace.tier
            watermarks[text] = try await loadSource(url, trace: trace).data
            trace.tier = tier  // the response's tier is its source's
        }
        return watermarks
    }

    /// The processing of one result: joined with identical requests in flight, run on the pool.
    private func process(
        _ source: Data, request: ImageRequest, watermarks: [String: Data] = [:],
        key: String
    ) async throws(ImageServiceError) -> ProcessedImage {
        let processor = self.processor
        let pool = self.pool
        let task = inFlight.withLock { tasks -> Task<Result<ProcessedImage, ImageServiceError>, Never> in
            if let running = tasks[key] { return running }
            let task = Task<Result<ProcessedImage, ImageServiceError>, Never> {
                let outcome = await pool.run { () -> Result<ProcessedImage, ImageServiceError> in
                    do throws(ImageServiceError) {
                        return .success(try processor.process(source, request: request, watermarks: watermarks))
                    } catch {
                        return .failure(error)
                    }
                }
                return outcome ?? .failure(ImageServiceError(503, code: "busy", "the service is busy; try again"))
            }
            tasks[key] = task
            return task
        }
        let outcome = await task.value
        inFlight.withLock { tasks in
            if tasks[key] == task { tasks[key] = nil }
        }
        let processed = try outcome.get()
        metrics.processed(processed.timings)
        return processed
    }

    /// Runs `body` on the worker pool (503 when it is full).
    private func runOnPool<Output: Sendable>(_ body: @escaping @Sendable () throws(ImageServiceError) -> Output)
        async throws(ImageServiceError) -> Output
    {
        let outcome = await pool.run { () -> Result<Output, ImageServiceError> in
            do throws(ImageServiceError) { return .success(try body()) } catch { return .failure(error) }
        }
        guard let outcome else { throw ImageServiceError(503, code: "busy", "the service is busy; try again") }
        return try outcome.get()
    }

    static func mimeType(_ format: ImageOperations.Format) -> String {
        switch format {
        case .jpeg: return "image/jpeg"
        case .jxl: return "image/jxl"
        default: return "image/" + format.rawValue
        }
    }
}

/// One request's facts for the metrics and the access log, filled in as it is answered.
final class RequestTrace {
    var grammar: ImageRequest.Grammar?
    var source: String?
    var tier: ImageServiceCacheTier?
}

/// An encoded result and what its response needs without the source: its `ETag`, the origin's
/// `Last-Modified`, and until when it is served without looking at the source again.
struct CachedResult: Sendable {
    var image: ProcessedImage
    var etag: String
    var lastModified: String?
    var expires: Date
}

/// Encoded results by key: in memory up to a byte budget (the oldest entries leave first), then
/// on disk (keyed by the result key's digest, the `ETag` and `Last-Modified` in the entry's
/// metadata, its expiry the result's time to live).
final class ResultCache: Sendable {
    enum Lookup {
        case fresh(CachedResult, ImageServiceCacheTier)
        case stale(CachedResult)
        case miss
    }

    private let memoryBytes: Int
    private let disk: DiskCache?
    private let memory = Locked((entries: [String: CachedResult](), order: [String](), bytes: 0))
    /// How long a result is fresh: its expiry minus this is when it was made.
    private let timeToLive: TimeInterval
    /// When each purged source was purged: a result of it made before is stale (revalidated
    /// against the source before it is served). Kept in `purgeLog` across restarts, for one
    /// time to live (an older result is stale anyway).
    private let purges: Locked<[String: Date]>
    private let purgeLog: URL?

    init(
        memoryBytes: Int, directory: URL?, diskLimit: Int? = nil, timeToLive: TimeInterval = 3600, purgeLog: URL? = nil
    ) {
        self.memoryBytes = memoryBytes
        self.timeToLive = timeToLive
        self.purgeLog = purgeLog
        disk = directory.flatMap {
            try? DiskCache(
                directory: $0,
                configuration: DiskCacheConfiguration(maxSize: diskLimit ?? DiskCacheConfiguration.automaticMaxSize))
        }
        purges = Locked(Self.readPurges(purgeLog, newerThan: Date().addingTimeInterval(-timeToLive)))
    }

    func get(_ key: String, source: String, now: Date = Date()) -> Lookup {
        let purgedAt = purges.withLock { $0.isEmpty ? nil : $0[source] }
        if let hit = memory.withLock({ $0.entries[key] }) {
            if let purgedAt, hit.expires.addingTimeInterval(-timeToLive) < purgedAt { return .stale(hit) }
            return hit.expires > now ? .fresh(hit, .resultMemory) : .stale(hit)
        }
        guard let disk, let (data, metadata) = disk.entry(forKey: Self.diskKey(key)),
            let format = Self.format(of: data),
            let etag = metadata?.http?.etag
        else { return .miss }
        let result = CachedResult(
            image: ProcessedImage(data: data, format: format, width: 0, height: 0, frameCount: 1), etag: etag,
            lastModified: metadata?.http?.lastModified, expires: metadata?.expiryDate ?? .distantPast)
        guard result.expires > now else { return .stale(result) }
        if let purgedAt, result.expires.addingTimeInterval(-timeToLive) < purgedAt { return .stale(result) }
        insert(key, result)
        return .fresh(result, .resultDisk)
    }

    /// Drops the results of `source` held in memory and marks every result of it made before
    /// `now` stale (those on disk, whose keys are digests, included). Returns the dropped keys.
    func purge(source: String, now: Date = Date()) -> [String] {
        let marker = "|" + source + "|"
        let dropped = memory.withLock { state -> [String] in
            let keys = state.entries.keys.filter { $0.contains(marker) }
            for key in keys { state.bytes -= state.entries.removeValue(forKey: key)?.image.data.count ?? 0 }
            if !keys.isEmpty { state.order.removeAll { key in keys.contains(key) } }
            return keys.sorted()
        }
        purges.withLock { purges in
            if purges.count >= 100_000 {
                let oldest = now.addingTimeInterval(-timeToLive)
                purges = purges.filter { $0.value > oldest }
            }
            purges[source] = now
        }
        if let purgeLog {
            // One line per purge: seconds since 1970, a tab, the source (which holds no tab or newline).
            let line = Data("\(Int(now.timeIntervalSince1970.rounded(.up)))\t\(source)\n".utf8)
            if let handle = try? FileHandle(forWritingTo: purgeLog) {
                _ = try? handle.seekToEnd()
                try? handle.write(contentsOf: line)
                try? handle.close()
            } else {
                try? line.write(to: purgeLog)
            }
        }
        return dropped
    }

    private static func readPurges(_ log: URL?, newerThan oldest: Date) -> [String: Date] {
        guard let log, let text = try? String(contentsOf: log, encoding: .utf8) else { return [:] }
        var purges: [String: Date] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 1)
            guard fields.count == 2, let seconds = Double(fields[0]) else { continue }
            let date = Date(timeIntervalSince1970: seconds)
            if date > oldest { purges[String(fields[1])] = max(date, purges[String(fields[1])] ?? date) }
        }
        // The log keeps only what is still needed.
        let kept = purges.map { "\(Int($0.value.timeIntervalSince1970.rounded(.up)))\t\($0.key)\n" }.joined()
        try? Data(kept.utf8).write(to: log, options: .atomic)
        return purges
    }

    func set(_ key: String, _ result: CachedResult) {
        insert(key, result)
        try? disk?.store(
            result.image.data, forKey: Self.diskKey(key), expiryDate: result.expires,
            http: HTTPCacheHeaders(etag: result.etag, lastModified: result.lastModified))
    }

    private func insert(_ key: String, _ result: CachedResult) {
        let size = result.image.data.count
        guard size <= memoryBytes / 8 else { return }
        memory.withLock { state in
            if let old = state.entries.updateValue(result, forKey: key) {
                state.bytes -= old.image.data.count
            } else {
                state.order.append(key)
            }
            state.bytes += size
            while state.bytes > memoryBytes, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                state.bytes -= state.entries.removeValue(forKey: oldest)?.image.data.count ?? 0
            }
        }
    }

    /// Waits for the disk's background work (the sweep) to finish: shutdown calls it.
    func flush() { disk?.waitForBackgroundWork() }

    static func diskKey(_ key: String) -> String {
        "result:" + SHA256.hash(data: Data(key.utf8)).hexString
    }

    static func format(of data: Data) -> ImageOperations.Format? {
        ImageProcessor.format(of: ImageSignature(data).format)
    }
}
