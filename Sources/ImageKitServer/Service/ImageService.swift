import Crypto
import Foundation
import ImageKit

/// The image service without its HTTP framework: a request's method, path and headers in, an
/// ``ImageServiceResponse`` out. The Hummingbird layer (and tests) call ``handle(method:path:headers:)``.
///
/// One request: parse (either grammar) → signature (constant time) → expiry, allowed source →
/// the source's bytes through an `ImageManager` (disk-cached, private addresses refused after
/// DNS and on every redirect, size and time limits) → `ETag` from the source's digest, the
/// canonical operations and the output format, so `If-None-Match` answers 304 with nothing
/// decoded → the result cache → on a miss, one joined job per result on the bounded worker pool
/// (full: 503 + `Retry-After`) → headers (`Cache-Control`, `Vary: Accept`, `Content-Disposition`).
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
    let manager: ImageManager
    let processor: ImageProcessor
    let pool: WorkerPool
    private let thumbor: ThumborSigner?
    private let imgproxy: ImgproxySigner?
    private let results: ResultCache
    private let inFlight = Locked<[String: Task<Result<ProcessedImage, ImageServiceError>, Never>]>([:])

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
        var downloads = ImageDownloaderConfiguration(totalTimeout: configuration.timeout, maxBodySize: configuration.maxSourceBytes,
                                                     maxRedirects: configuration.maxRedirects,
                                                     retryPolicy: ImageRetryPolicy(maxRetries: 2, baseDelay: 0.1, maxDelay: 1, maxRetryAfter: 2),
                                                     addressPolicy: AddressPolicy.publicOnly.allowing(networks: configuration.allowedNetworks))
        downloads.connectTimeout = min(configuration.timeout, 5)
        downloads.hostOverrides = configuration.hostOverrides
        let cache: ImageCache
        if let directory = configuration.cacheDirectory {
            do {
                cache = try ImageCache(directory: directory.appendingPathComponent("sources"),
                                       configuration: ImageCacheConfiguration(cachesImagesInMemory: false))
            } catch {
                throw ImageServiceError(500, code: "cacheUnavailable", "cannot open the cache directory")
            }
        } else {
            cache = ImageCache(memoryCache: MemoryCache(configuration: .init(costLimit: 1)), diskCache: UnavailableDiskCache())
        }
        // The service never decodes through the manager: only bytes are loaded (and cached).
        var managerConfiguration = ImageManagerConfiguration(failedURLTimeToLive: 60)
        managerConfiguration.storeErrorHandler = nil
        manager = ImageManager(cache: cache, loader: ImageLoadersManager(loaders: [ImageDownloader(configuration: downloads)]),
                               configuration: managerConfiguration)
        processor = ImageProcessor(maxPixels: configuration.maxPixels)
        pool = WorkerPool(width: configuration.workers, queueLimit: configuration.queueLimit)
        results = ResultCache(memoryBytes: configuration.resultMemoryBytes,
                              directory: configuration.cacheDirectory?.appendingPathComponent("results"))
    }

    /// Answers one request. Never throws: every failure is a status and a JSON body.
    public func handle(method: String, path: String, headers: [String: String]) async -> ImageServiceResponse {
        let isHead = method.uppercased() == "HEAD"
        var response: ImageServiceResponse
        do throws(ImageServiceError) {
            guard ["GET", "HEAD"].contains(method.uppercased()) else {
                throw ImageServiceError(405, code: "methodNotAllowed", "only GET and HEAD are served")
            }
            response = try await answer(path: path, headers: Self.lowercased(headers))
        } catch {
            response = .error(error)
        }
        if isHead { response.body = Data() }
        return response
    }

    static func lowercased(_ headers: [String: String]) -> [String: String] {
        Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    private func answer(path: String, headers: [String: String]) async throws(ImageServiceError) -> ImageServiceResponse {
        let rawPath = String(path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        let request = try ImageRequest.parse(path: rawPath, presets: configuration.presets)
        try authorize(request)
        let operations = request.operations
        let now = Int(Date().timeIntervalSince1970)
        if let expires = operations.expires, expires <= now { throw ImageServiceError(404, code: "expired", "the URL has expired") }
        guard allows(request.source) else { throw ImageServiceError(403, code: "sourceNotAllowed", "this source host is not allowed") }

        let source = try await loadSource(request.source)
        if operations.metadataOnly {
            let processor = self.processor
            let body = try await runOnPool { () throws(ImageServiceError) -> Data in try processor.metadata(source, request: request) }
            return ImageServiceResponse(status: 200, headers: [(name: "Content-Type", value: "application/json"),
                                                               (name: "Content-Length", value: String(body.count)),
                                                               (name: "Cache-Control", value: cacheControl(operations, now: now))], body: body)
        }
        let signature = ImageSignature(source)
        // Negotiation: only when no format is asked and the source is no animation (kept as it is).
        let accept = headers["accept"]?.lowercased() ?? ""
        var negotiated: ImageOperations.Format?
        let negotiates = operations.format == nil && (configuration.autoWebP || configuration.autoAVIF)
            && !signature.isAnimated && signature.format != .gif
        if negotiates {
            if configuration.autoAVIF, accept.contains("image/avif") { negotiated = .avif }
            else if configuration.autoWebP, accept.contains("image/webp") { negotiated = .webp }
        }
        var effective = request
        if let negotiated { effective.operations.format = negotiated }

        let sourceDigest = SHA256.hash(data: source).prefix(12).hexString
        let resultKey = effective.operations.canonicalKey + "|" + request.source.absoluteString + "|" + sourceDigest
            + "|" + (effective.operations.format?.rawValue ?? "source")
        let etag = "\"" + SHA256.hash(data: Data(resultKey.utf8)).prefix(16).hexString + "\""
        var common: [(String, String)] = [("ETag", etag), ("Cache-Control", cacheControl(operations, now: now))]
        if negotiates { common.append(("Vary", "Accept")) }
        if let match = headers["if-none-match"], match.split(separator: ",").contains(where: {
            let tag = $0.trimmingCharacters(in: .whitespaces)
            return tag == etag || tag == "W/" + etag || tag == "*"
        }) {
            return ImageServiceResponse(status: 304, headers: common.map { (name: $0.0, value: $0.1) })
        }

        let processed: ProcessedImage
        if let hit = results.get(resultKey) {
            processed = hit
        } else {
            processed = try await process(source, request: effective, key: resultKey)
        }
        var fields: [(String, String)] = [("Content-Type", Self.mimeType(processed.format)), ("Content-Length", String(processed.data.count))]
        fields += common
        if operations.filename != nil || operations.returnAttachment {
            let name = (operations.filename ?? "image") + "." + (processed.format == .jpeg ? "jpg" : processed.format.rawValue)
            let safe = name.replacingOccurrences(of: "\"", with: "")
            fields.append(("Content-Disposition", (operations.returnAttachment ? "attachment" : "inline") + "; filename=\"\(safe)\""))
        }
        return ImageServiceResponse(status: 200, headers: fields.map { (name: $0.0, value: $0.1) }, body: processed.data)
    }

    /// A signed URL must carry a valid signature for its grammar; an unsigned one needs `allowsUnsafe`.
    private func authorize(_ request: ImageRequest) throws(ImageServiceError) {
        guard let signature = request.signature else {
            guard configuration.allowsUnsafe else { throw ImageServiceError(403, code: "unsignedURL", "unsigned URLs are not allowed") }
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

    /// The source's bytes, through the manager (disk cache, address policy, limits).
    private func loadSource(_ url: URL) async throws(ImageServiceError) -> Data {
        do {
            // The disk write is awaited: the next request for this source (a second size of it,
            // often moments later) must find it, not race a background write to the origin.
            let result = try await manager.loadImage(url, options: [.avoidDecodeImage, .waitStoreCache])
            guard let data = result.data, !data.isEmpty else { throw ImageServiceError(502, code: "emptySource", "the origin sent no bytes") }
            return data
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
            return ImageServiceError(502, code: "originFailed", "the origin answered \(error.httpStatusCode.map(String.init) ?? "an error")")
        case .timedOut: return ImageServiceError(504, code: "originTimeout", "the origin did not answer in time")
        case .forbiddenAddress: return ImageServiceError(403, code: "addressNotAllowed", "the source resolves to an address that is not allowed")
        case .responseTooLarge: return ImageServiceError(413, code: "sourceTooLarge", "the source is larger than the limit")
        case .invalidURL: return ImageServiceError(400, code: "invalidSource", "the source URL cannot be fetched")
        case .blacklisted: return ImageServiceError(404, code: "sourceNotFound", "the source failed permanently a moment ago")
        default: return ImageServiceError(502, code: "originFailed", "the source could not be fetched (\(error.code))")
        }
    }

    /// The processing of one result: joined with identical requests in flight, run on the pool.
    private func process(_ source: Data, request: ImageRequest, key: String) async throws(ImageServiceError) -> ProcessedImage {
        let processor = self.processor
        let pool = self.pool
        let task = inFlight.withLock { tasks -> Task<Result<ProcessedImage, ImageServiceError>, Never> in
            if let running = tasks[key] { return running }
            let task = Task<Result<ProcessedImage, ImageServiceError>, Never> {
                let outcome = await pool.run { () -> Result<ProcessedImage, ImageServiceError> in
                    do throws(ImageServiceError) {
                        return .success(try processor.process(source, request: request))
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
        results.set(key, processed)
        return processed
    }

    /// Runs `body` on the worker pool (503 when it is full).
    private func runOnPool<Output: Sendable>(_ body: @escaping @Sendable () throws(ImageServiceError) -> Output) async throws(ImageServiceError) -> Output {
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

/// Encoded results by key: in memory up to a byte budget (the oldest entries leave first), then
/// on disk (keyed by the result key's digest).
final class ResultCache: Sendable {
    private let memoryBytes: Int
    private let disk: DiskCache?
    private let memory = Locked((entries: [String: ProcessedImage](), order: [String](), bytes: 0))

    init(memoryBytes: Int, directory: URL?) {
        self.memoryBytes = memoryBytes
        disk = directory.flatMap { try? DiskCache(directory: $0) }
    }

    func get(_ key: String) -> ProcessedImage? {
        if let hit = memory.withLock({ $0.entries[key] }) { return hit }
        guard let disk, let data = disk.data(forKey: Self.diskKey(key)), let format = Self.format(of: data) else { return nil }
        let image = ProcessedImage(data: data, format: format, width: 0, height: 0, frameCount: 1)
        insert(key, image)
        return image
    }

    func set(_ key: String, _ image: ProcessedImage) {
        insert(key, image)
        try? disk?.store(image.data, forKey: Self.diskKey(key))
    }

    private func insert(_ key: String, _ image: ProcessedImage) {
        guard image.data.count <= memoryBytes / 8 else { return }
        memory.withLock { state in
            if state.entries[key] != nil { return }
            state.entries[key] = image
            state.order.append(key)
            state.bytes += image.data.count
            while state.bytes > memoryBytes, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                state.bytes -= state.entries.removeValue(forKey: oldest)?.data.count ?? 0
            }
        }
    }

    static func diskKey(_ key: String) -> String {
        "result:" + SHA256.hash(data: Data(key.utf8)).hexString
    }

    static func format(of data: Data) -> ImageOperations.Format? {
        ImageProcessor.format(of: ImageSignature(data).format)
    }
}
