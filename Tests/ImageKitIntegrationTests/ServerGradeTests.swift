import Foundation
import NIOHTTP1
import XCTest

@testable import ImageKit

/// What servers need of the loader, against the in-process server: per-request isolation, the
/// failed-URL rule, hooks, retries, priorities, transport settings and resumable downloads.
final class ServerGradeTests: XCTestCase {
    var server: TestHTTPServer!
    var directory: URL!

    /// An 8×8 PNG of one grey level: each tenant's image is told apart by its pixels.
    static func png(_ level: UInt8, size: Int = 8) -> [UInt8] {
        let buffer = try! PixelBuffer(width: size, height: size)
        buffer.baseAddress.initializeMemory(as: UInt8.self, repeating: level, count: buffer.byteCount)
        let image = DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png)
        return Array(try! ImageCodersManager.shared.encode(image, as: .png, options: .default))
    }

    static let tenantA = png(10)
    static let tenantB = png(240)

    override func setUpWithError() throws {
        server = try TestHTTPServer()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("server-grade-\(UUID().uuidString)")
        // The origin answers each tenant with its own image, slowly, so concurrent loads overlap.
        server.route("/tenant.png") { head in
            switch head.headers["Authorization"].first {
            case "Bearer a": return .init(body: Self.tenantA, chunkSize: 32, delay: .milliseconds(15))
            case "Bearer b": return .init(body: Self.tenantB, chunkSize: 32, delay: .milliseconds(15))
            default: return .init(status: .forbidden, body: Array("no".utf8))
            }
        }
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func makeManager(
        _ configuration: ImageDownloaderConfiguration = .init(),
        managerConfiguration: ImageManagerConfiguration = .init()
    ) throws -> ImageManager {
        let cache = try ImageCache(directory: directory, configuration: .init(disk: .init(sweepsAtOpen: false)))
        return ImageManager(
            cache: cache, loader: ImageDownloader(configuration: configuration), configuration: managerConfiguration)
    }

    func level(_ image: DecodedImage?) -> UInt8? { image?.frames.first?.bitmap.withUnsafeBytes { $0.first } }

    // MARK: Defect 1: headers are part of every key

    func testConcurrentLoadsWithDifferentHeadersNeverShareATransfer() async throws {
        let downloader = ImageDownloader()
        let url = server.url("/tenant.png")
        let results = await withTaskGroup(of: (String, [UInt8]?).self) { group in
            for index in 0..<8 {
                let tenant = index % 2 == 0 ? "a" : "b"
                group.addTask {
                    let response = try? await downloader.load(
                        ImageLoadRequest(url: url, headers: ["Authorization": "Bearer \(tenant)"]))
                    return (tenant, response.map { Array($0.data) })
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (tenant, bytes) in results {
            XCTAssertEqual(
                bytes, tenant == "a" ? Self.tenantA : Self.tenantB, "tenant \(tenant) got another tenant's bytes")
        }
        XCTAssertEqual(server.requests(to: "/tenant.png"), 2, "one transfer per header set")
    }

    func testAModifiersHeadersAreWhatTransfersAreKeyedBy() async throws {
        // Both requests arrive without headers; the modifier gives each its tenant's token.
        var configuration = ImageDownloaderConfiguration()
        configuration.requestModifier = { request in
            var modified = request
            modified.headers = ["Authorization": "Bearer " + (request.url.query ?? "")]
            modified.url = URL(string: request.url.absoluteString.components(separatedBy: "?")[0])!
            return modified
        }
        let downloader = ImageDownloader(configuration: configuration)
        let (urlA, urlB) = (server.url("/tenant.png?a"), server.url("/tenant.png?b"))
        async let a = downloader.load(urlA)
        async let b = downloader.load(urlB)
        let (first, second) = try await (a, b)
        XCTAssertEqual(Array(first.data), Self.tenantA)
        XCTAssertEqual(Array(second.data), Self.tenantB)
    }

    func testTheCachesKeepEachTenantsImageApart() async throws {
        let manager = try makeManager()
        let url = server.url("/tenant.png")
        var a = ImageLoadContext()
        a.requestHeaders = ["Authorization": "Bearer a"]
        var b = ImageLoadContext()
        b.requestHeaders = ["Authorization": "Bearer b"]
        let first = try await manager.loadImage(url, options: .waitStoreCache, context: a)
        XCTAssertEqual(level(first.image), 10)
        let second = try await manager.loadImage(url, options: .waitStoreCache, context: b)
        XCTAssertEqual(level(second.image), 240, "tenant b is never served tenant a's cached image")
        XCTAssertEqual(second.cacheType, .none)
        // Memory and disk both answer per tenant.
        let again = try await manager.loadImage(url, context: a)
        XCTAssertEqual(level(again.image), 10)
        XCTAssertEqual(again.cacheType, .memory)
        await manager.cache.clear(.memory)
        let fromDisk = try await manager.loadImage(url, context: b)
        XCTAssertEqual(level(fromDisk.image), 240)
        XCTAssertEqual(fromDisk.cacheType, .disk)
        // Without headers nothing cached for a tenant answers: the origin refuses (403).
        do {
            _ = try await manager.loadImage(url)
            XCTFail("a load without credentials got a tenant's image")
        } catch {
            XCTAssertEqual(error.httpStatusCode, 403)
        }
        // A tenant's failure is not another's: tenant a still loads (from memory or not).
        XCTAssertFalse(manager.isFailedURL(url, requestHeaders: ["Authorization": "Bearer a"]))
        XCTAssertTrue(manager.isFailedURL(url))
        XCTAssertEqual(server.requests(to: "/tenant.png"), 3)
    }

    func testAKeyFilterMayDeclareTheHeadersIrrelevant() async throws {
        server.route("/public.png", .init(body: Self.tenantA))
        let manager = try makeManager()
        let url = server.url("/public.png")
        var context = ImageLoadContext()
        context.cacheKeyFilter = CacheKeyFilter(ignoresRequestHeaders: true) { $0.absoluteString }
        context.requestHeaders = ["Authorization": "Bearer a"]
        _ = try await manager.loadImage(url, options: .waitStoreCache, context: context)
        context.requestHeaders = ["Authorization": "Bearer b"]
        let shared = try await manager.loadImage(url, context: context)
        XCTAssertEqual(shared.cacheType, .memory)
        XCTAssertEqual(server.requests(to: "/public.png"), 1)
    }

    // MARK: Defect 2: only the URL's own failures block it

    struct FailingTransformer: ImageTransforming {
        var transformerKey: String { "Failing" }
        func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
            throw ImageError(.invalidArgument, "a crop outside the image")
        }
    }

    func testATransformerOrALoadsLimitsNeverBlockTheURL() async throws {
        server.route("/big.png", .init(body: Self.png(90, size: 64)))
        let manager = try makeManager()
        let url = server.url("/big.png")
        var failing = ImageLoadContext()
        failing.transformer = FailingTransformer()
        do {
            _ = try await manager.loadImage(url, context: failing)
            XCTFail("the transformer should fail")
        } catch {
            XCTAssertEqual(error.code, .invalidArgument)
        }
        XCTAssertFalse(manager.isFailedURL(url))
        var strict = ImageLoadContext()
        var decoding = ImageDecodingOptions.default
        decoding.limits.maxPixelsPerFrame = 100
        strict.decodingOptions = decoding
        do {
            _ = try await manager.loadImage(url, context: strict)
            XCTFail("the limit should refuse the image")
        } catch {
            XCTAssertEqual(error.code, .decompressionBomb)
        }
        XCTAssertFalse(manager.isFailedURL(url))
        let plain = try await manager.loadImage(url)
        XCTAssertEqual(plain.image?.width, 64)
    }

    func testA404AndUndecodableBytesBlockButA500DoesNotAndEntriesExpire() async throws {
        server.route("/html.png", .init(headers: [("Content-Type", "text/html")], body: Array("<html></html>".utf8)))
        server.route("/down.png", .init(status: .internalServerError, body: Array("x".utf8)))
        let manager = try makeManager(managerConfiguration: .init(failedURLTimeToLive: 0.5))
        XCTAssertEqual(ImageManagerConfiguration().failedURLTimeToLive, 300, "the documented default")
        for path in ["/gone.png", "/html.png", "/down.png"] {
            do { _ = try await manager.loadImage(server.url(path)); XCTFail(path) } catch {}
        }
        XCTAssertTrue(manager.isFailedURL(server.url("/gone.png")))
        XCTAssertTrue(manager.isFailedURL(server.url("/html.png")))
        XCTAssertFalse(manager.isFailedURL(server.url("/down.png")))
        try await Task.sleep(for: .milliseconds(600))
        XCTAssertFalse(manager.isFailedURL(server.url("/gone.png")), "entries expire after the time to live")
    }

    func testTheDefaultRuleByStage() {
        let notFound = ImageError(.invalidStatusCode, "", httpStatusCode: 404)
        XCTAssertTrue(ImageManager.blocksURL(after: notFound, at: .load))
        for status in [408, 429, 500, 503] {
            XCTAssertFalse(
                ImageManager.blocksURL(after: ImageError(.invalidStatusCode, "", httpStatusCode: status), at: .load),
                "\(status)")
        }
        for code: ImageError.Code in [
            .networkError, .secureConnectionFailed, .timedOut, .forbiddenAddress, .responseTooLarge, .cancelled,
        ] {
            XCTAssertFalse(ImageManager.blocksURL(after: ImageError(code, ""), at: .load), "\(code)")
        }
        XCTAssertTrue(ImageManager.blocksURL(after: ImageError(.badImageData, ""), at: .decode))
        XCTAssertFalse(ImageManager.blocksURL(after: ImageError(.decompressionBomb, ""), at: .decode))
        XCTAssertFalse(ImageManager.blocksURL(after: ImageError(.badImageData, ""), at: .transform))
        XCTAssertFalse(ImageManager.blocksURL(after: ImageError(.invalidArgument, ""), at: .transform))
    }

    // MARK: Hooks

    func testAnAsyncWillLoadHookSignsRequestsAndCanRefuse() async throws {
        server.route("/signed.png", .init(body: Self.tenantA))
        var configuration = ImageDownloaderConfiguration()
        configuration.willLoad = { request in
            try await Task.sleep(for: .milliseconds(5))  // a token service
            guard !request.url.path.contains("refused") else {
                throw ImageError(.invalidArgument, "no token for this URL")
            }
            var signed = request
            signed.headers["Authorization"] = "Bearer fresh"
            return signed
        }
        let downloader = ImageDownloader(configuration: configuration)
        _ = try await downloader.load(server.url("/signed.png"))
        XCTAssertEqual(server.headers(of: "/signed.png")?["Authorization"].first, "Bearer fresh")
        do {
            _ = try await downloader.load(server.url("/refused.png"))
            XCTFail("the hook refused")
        } catch {
            XCTAssertEqual(error.code, .invalidArgument)
        }
        XCTAssertEqual(server.requests(to: "/refused.png"), 0)
        // A token cancelled while its hook runs completes once, with cancelled, and sends nothing.
        let done = expectation(description: "cancelled")
        let token = downloader.download(ImageLoadRequest(url: server.url("/signed.png?late"))) { result in
            if case .failure(let error) = result {
                XCTAssertEqual(error.code, .cancelled)
            } else {
                XCTFail("not cancelled")
            }
            done.fulfill()
        }
        token.cancel()
        await fulfillment(of: [done], timeout: 5)
        XCTAssertEqual(server.requests(to: "/signed.png"), 1)
    }

    func testPerLoadHooksWinOverTheDownloadersAndRunPerCaller() async throws {
        server.route(
            "/encrypted",
            .init(
                headers: [("Content-Type", "application/octet-stream"), ("X-Kind", "enc")],
                body: Array(Data(Self.tenantA).base64EncodedData())))
        var configuration = ImageDownloaderConfiguration()
        configuration.requestModifier = { request in
            var modified = request
            modified.headers["X-From"] = "downloader"
            return modified
        }
        configuration.responseValidator = { _, headers in headers["x-kind"] == "enc" }
        let manager = try makeManager(configuration)
        var context = ImageLoadContext()
        context.loadHooks.requestModifier = { request in
            var modified = request
            modified.headers["X-From"] = "load"
            return modified
        }
        context.loadHooks.responseModifier = { head in
            var modified = head
            modified.headers["content-type"] = "image/png"
            return modified
        }
        context.loadHooks.decryptor = { data, headers in
            XCTAssertEqual(headers["content-type"], "image/png", "the decryptor sees the modified headers")
            return Data(base64Encoded: data)
        }
        let result = try await manager.loadImage(server.url("/encrypted"), context: context)
        XCTAssertEqual(level(result.image), 10)
        XCTAssertEqual(server.headers(of: "/encrypted")?["X-From"].first, "load")
        // Without the per-load decryptor the bytes are base64 text: undecodable.
        let bare = ImageManager(
            cache: ImageCache(memoryCache: MemoryCache(), diskCache: UnavailableDiskCache()),
            loader: ImageDownloader(configuration: configuration))
        do { _ = try await bare.loadImage(server.url("/encrypted")); XCTFail("not an image") } catch {
            XCTAssertEqual(error.code, .badImageData)
        }
        XCTAssertEqual(server.headers(of: "/encrypted")?["X-From"].first, "downloader")
        // A response modifier that refuses, and the validator that refuses.
        var refusing = ImageLoadContext()
        refusing.loadHooks.responseModifier = { _ in nil }
        // (.retryFailed: the undecodable base64 above put the URL on the failed list, as it should.)
        do {
            _ = try await bare.loadImage(server.url("/encrypted"), options: .retryFailed, context: refusing);
            XCTFail("refused")
        } catch {
            XCTAssertEqual(error.code, .invalidResponse)
        }
        server.route("/plain.png", .init(body: Self.tenantA))
        do { _ = try await bare.loadImage(server.url("/plain.png")); XCTFail("the validator refuses") } catch {
            XCTAssertEqual(error.code, .invalidResponse)
        }
    }

    // MARK: Retries

    func testTransientFailuresAreRetriedWithBackoffAndRetryAfter() async throws {
        let attempts = Locked(0)
        server.route("/flaky.png") { _ in
            let attempt = attempts.withLock {
                $0 += 1; return $0
            }
            if attempt == 1 { return .init(status: .serviceUnavailable, headers: [("Retry-After", "1")]) }
            if attempt == 2 { return .init(status: .internalServerError) }
            return .init(body: Self.tenantA)
        }
        var configuration = ImageDownloaderConfiguration()
        configuration.retryPolicy = ImageRetryPolicy(maxRetries: 2, baseDelay: 0.01)
        let downloader = ImageDownloader(configuration: configuration)
        let start = Date()
        let response = try await downloader.load(server.url("/flaky.png"))
        XCTAssertEqual(Array(response.data), Self.tenantA)
        XCTAssertEqual(server.requests(to: "/flaky.png"), 3)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.95, "Retry-After: 1 was honoured")

        // Off by default; a 404 is never retried; a Retry-After beyond the limit is not waited for.
        server.route("/always-503") { _ in .init(status: .serviceUnavailable, headers: [("Retry-After", "3600")]) }
        do { _ = try await downloader.load(server.url("/always-503")); XCTFail("503") } catch {
            XCTAssertEqual(error.httpStatusCode, 503)
        }
        XCTAssertEqual(server.requests(to: "/always-503"), 1)
        do { _ = try await downloader.load(server.url("/missing")); XCTFail("404") } catch {}
        XCTAssertEqual(server.requests(to: "/missing"), 1)
        let plain = ImageDownloader()
        do { _ = try await plain.load(server.url("/always-503")); XCTFail("503") } catch {}
        XCTAssertEqual(server.requests(to: "/always-503"), 2)

        // Per request: a connection refused is retried too.
        let closed = try TestHTTPServer()
        let deadURL = closed.url("/x.png")
        closed.stop()
        var request = ImageLoadRequest(url: deadURL)
        request.retryPolicy = ImageRetryPolicy(maxRetries: 2, baseDelay: 0.01)
        do { _ = try await plain.load(request); XCTFail("refused") } catch {
            XCTAssertEqual(error.code, .cannotConnect)
        }
    }

    func testATransferWhoseBytesWereLookedAtIsNotRetried() async throws {
        let body = Self.png(3, size: 32)
        server.route("/cut.png") { _ in
            .init(
                headers: [("Content-Length", "100000")], body: body + [UInt8](repeating: 1, count: 4000),
                chunkSize: 500,
                delay: .milliseconds(20), closeAfter: 3000)
        }
        var configuration = ImageDownloaderConfiguration()
        configuration.retryPolicy = ImageRetryPolicy(maxRetries: 2, baseDelay: 0.01)
        configuration.resumableDataLimit = 0
        let downloader = ImageDownloader(configuration: configuration)
        let done = expectation(description: "done")
        let looked = Locked(false)
        var request = ImageLoadRequest(url: server.url("/cut.png"))
        request.deliversReceivedBytes = true  // a progressive preview reads the bytes as they arrive
        downloader.download(
            request,
            progress: { progress in
                if let bytes = progress.newBytes, !bytes.isEmpty { looked.withLock { $0 = true } }
            }
        ) { result in
            if case .failure(let error) = result {
                XCTAssertEqual(error.code, .connectionLost)
            } else {
                XCTFail("the body was cut")
            }
            done.fulfill()
        }
        await fulfillment(of: [done], timeout: 10)
        XCTAssertTrue(looked.withLock { $0 })
        XCTAssertEqual(server.requests(to: "/cut.png"), 1, "a caller saw the first bytes: no retry")
    }

    func testRetryDelaysGrowAndStayWithinTheCeiling() {
        let policy = ImageRetryPolicy(maxRetries: 5, baseDelay: 0.1, maxDelay: 1)
        XCTAssertEqual(policy.delay(beforeRetry: 0, retryAfter: nil, random: 1), 0.1)
        XCTAssertEqual(policy.delay(beforeRetry: 2, retryAfter: nil, random: 1), 0.4)
        XCTAssertEqual(policy.delay(beforeRetry: 10, retryAfter: nil, random: 1), 1)
        XCTAssertEqual(policy.delay(beforeRetry: 3, retryAfter: nil, random: 0.5), 0.4)
        XCTAssertEqual(policy.delay(beforeRetry: 0, retryAfter: 4, random: 0), 4)
        XCTAssertNil(policy.delay(beforeRetry: 0, retryAfter: 60, random: 0))
        XCTAssertEqual(ImageRetryPolicy.retryAfterSeconds("120"), 120)
        let now = Date(timeIntervalSince1970: 784_111_717)  // Sun, 06 Nov 1994 08:48:37 GMT
        XCTAssertEqual(ImageRetryPolicy.retryAfterSeconds("Sun, 06 Nov 1994 08:49:37 GMT", now: now), 60)
        XCTAssertNil(ImageRetryPolicy.retryAfterSeconds("soon"))
    }

    // MARK: Priority

    func testAWaitingTransferIsRaisedToItsCallersHighestPriority() async throws {
        let order = Locked<[String]>([])
        for name in ["low", "normal"] {
            server.route("/\(name).png") { _ in
                order.withLock { $0.append(name) }
                return .init(body: Self.tenantA)
            }
        }
        let downloader = ImageDownloader(configuration: .init(maxConcurrentDownloads: 1))
        downloader.suspend()
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 3
        let low = downloader.download(ImageLoadRequest(url: server.url("/low.png"), priority: .low)) { _ in
            done.fulfill()
        }
        downloader.download(ImageLoadRequest(url: server.url("/normal.png"))) { _ in done.fulfill() }
        // A high-priority caller joins the low one: the shared transfer now outranks "normal".
        downloader.download(ImageLoadRequest(url: server.url("/low.png"), priority: .high)) { _ in done.fulfill() }
        _ = low
        downloader.resume()
        await fulfillment(of: [done], timeout: 10)
        XCTAssertEqual(order.withLock { $0 }, ["low", "normal"])

        // A token raised while it waits.
        order.withLock { $0 = [] }
        downloader.suspend()
        let again = expectation(description: "again")
        again.expectedFulfillmentCount = 2
        let waiting = downloader.download(ImageLoadRequest(url: server.url("/low.png"), priority: .low)) { _ in
            again.fulfill()
        }
        downloader.download(ImageLoadRequest(url: server.url("/normal.png"))) { _ in again.fulfill() }
        waiting.setPriority(.high)
        downloader.resume()
        await fulfillment(of: [again], timeout: 10)
        XCTAssertEqual(order.withLock { $0 }, ["low", "normal"])
    }

    func testAUserLoadJoiningAPrefetchRaisesTheTransfer() async throws {
        let order = Locked<[String]>([])
        for name in ["prefetched", "other"] {
            server.route("/\(name).png") { _ in
                order.withLock { $0.append(name) }
                return .init(body: Self.tenantA)
            }
        }
        let downloader = ImageDownloader(configuration: .init(maxConcurrentDownloads: 1))
        let manager = ImageManager(
            cache: ImageCache(memoryCache: MemoryCache(), diskCache: UnavailableDiskCache()), loader: downloader)
        downloader.suspend()
        let done = expectation(description: "loads")
        done.expectedFulfillmentCount = 3
        manager.loadImage(with: server.url("/prefetched.png"), options: .lowPriority) { _ in done.fulfill() }
        manager.loadImage(with: server.url("/other.png")) { _ in done.fulfill() }
        try await Task.sleep(for: .milliseconds(100))  // both are queued in the downloader
        let user = manager.loadImage(with: server.url("/prefetched.png"), options: .lowPriority) { _ in done.fulfill() }
        user.priority = .high  // e.g. the cell became visible
        try await Task.sleep(for: .milliseconds(50))
        downloader.resume()
        await fulfillment(of: [done], timeout: 10)
        XCTAssertEqual(order.withLock { $0 }, ["prefetched", "other"])
    }

    // MARK: Transport

    func testHostOverridesRawOptionsAndTheFinalURL() async throws {
        server.route("/final.png", .init(body: Self.tenantA))
        server.route("/start") { _ in .init(status: .found, headers: [("Location", "/final.png")]) }
        var configuration = ImageDownloaderConfiguration()
        configuration.hostOverrides = ["images.test:\(server.port):127.0.0.1"]
        configuration.curlOptions = [.string(option: 10016 /* CURLOPT_REFERER */, value: "https://raw.example/")]
        let manager = try makeManager(configuration)
        let result = try await manager.loadImage(URL(string: "http://images.test:\(server.port)/start")!)
        XCTAssertEqual(level(result.image), 10)
        XCTAssertEqual(result.finalURL?.absoluteString, "http://images.test:\(server.port)/final.png")
        XCTAssertEqual(server.headers(of: "/final.png")?["Host"].first, "images.test:\(server.port)")
        XCTAssertEqual(server.headers(of: "/final.png")?["Referer"].first, "https://raw.example/")
    }

    func testAWrongPinnedKeyOrCABundleFailsOnlyTLSAndAMissingProxyFailsToConnect() async throws {
        var configuration = ImageDownloaderConfiguration()
        configuration.proxy = "http://127.0.0.1:1"  // nothing listens on port 1
        configuration.noProxy = ""
        let proxied = ImageDownloader(configuration: configuration)
        do { _ = try await proxied.load(URL(string: "http://images.test/a.png")!); XCTFail("no proxy there") } catch {
            XCTAssertEqual(error.code, .cannotConnect)
        }
        XCTAssertEqual(server.requests(to: "/a.png"), 0)
        configuration.proxy = nil
        configuration.noProxy = "*"
        let direct = ImageDownloader(configuration: configuration)
        server.route("/direct.png", .init(body: Self.tenantA))
        _ = try await direct.load(server.url("/direct.png"))
    }

    // MARK: Resumable downloads

    func testAnInterruptedTransferResumesWithRangeAndIfRange() async throws {
        // Noise, so the PNG is far larger than the 600 bytes the first answer breaks off at.
        let noise = try PixelBuffer(width: 64, height: 64)
        var seed: UInt32 = 7
        for index in 0..<noise.byteCount {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            noise.baseAddress.storeBytes(of: UInt8(truncatingIfNeeded: seed >> 24), toByteOffset: index, as: UInt8.self)
        }
        let body = Array(
            try ImageCodersManager.shared.encode(
                DecodedImage(frames: [ImageFrame(bitmap: noise.freeze(isOpaque: false))], format: .png),
                as: .png, options: .default))
        XCTAssertGreaterThan(body.count, 10_000)
        let served = Locked<[String]>([])
        server.route("/resume.png") { head in
            let range = head.headers["Range"].first
            served.withLock { $0.append(range ?? "whole") }
            if let range, head.headers["If-Range"].first == "\"r1\"",
                let start = Int(range.dropFirst("bytes=".count).dropLast())
            {
                return .init(
                    status: .partialContent,
                    headers: [("ETag", "\"r1\""), ("Content-Range", "bytes \(start)-\(body.count - 1)/\(body.count)")],
                    body: Array(body[start...]))
            }
            // The first answer breaks off after 600 bytes.
            return .init(
                headers: [("ETag", "\"r1\""), ("Accept-Ranges", "bytes"), ("Content-Length", String(body.count))],
                body: body, closeAfter: 600)
        }
        let downloader = ImageDownloader()
        do { _ = try await downloader.load(server.url("/resume.png")); XCTFail("the connection broke") } catch {
            XCTAssertEqual(error.code, .connectionLost)
        }
        XCTAssertEqual(downloader.resumable.byteCount, 600)
        let response = try await downloader.load(server.url("/resume.png"))
        XCTAssertEqual(Array(response.data), body)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(served.withLock { $0 }, ["whole", "bytes=600-"])
        XCTAssertEqual(downloader.resumable.byteCount, 0)

        // With retries, one load recovers by itself.
        served.withLock { $0 = [] }
        var configuration = ImageDownloaderConfiguration()
        configuration.retryPolicy = ImageRetryPolicy(maxRetries: 1, baseDelay: 0.01)
        let retrying = ImageDownloader(configuration: configuration)
        let recovered = try await retrying.load(server.url("/resume.png"))
        XCTAssertEqual(Array(recovered.data), body)
        XCTAssertEqual(served.withLock { $0 }, ["whole", "bytes=600-"])
    }
}
