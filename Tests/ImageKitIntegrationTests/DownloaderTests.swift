import Foundation
import NIOHTTP1
import XCTest

@testable import ImageKit

final class DownloaderTests: XCTestCase {
    var server: TestHTTPServer!
    static let png: [UInt8] = {
        let image = DecodedImage(
            frames: [
                ImageFrame(
                    bitmap: {
                        let buffer = try! PixelBuffer(width: 8, height: 8)
                        buffer.baseAddress.initializeMemory(as: UInt8.self, repeating: 200, count: buffer.byteCount)
                        return buffer.freeze(isOpaque: true)
                    }())
            ], format: .png)
        return Array(try! ImageCodersManager.shared.encode(image, as: .png, options: .default))
    }()

    var png: [UInt8] { Self.png }
    override func setUpWithError() throws { server = try TestHTTPServer() }
    override func tearDown() { server.stop() }

    func testDownloadsDecodableBytesWithHeadersAndMetrics() async throws {
        server.route(
            "/a.png",
            .init(
                headers: [("Content-Type", "image/png"), ("ETag", "\"v1\""), ("Cache-Control", "max-age=60")], body: png
            ))
        let downloader = ImageDownloader()
        let response = try await downloader.load(server.url("/a.png"))
        XCTAssertEqual(Array(response.data), png)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.cacheHeaders.etag, "\"v1\"")
        XCTAssertEqual(response.cacheHeaders.maxAge, 60)
        XCTAssertEqual(response.metrics.httpVersion, "1.1")
        XCTAssertEqual(response.metrics.bytesReceived, Int64(png.count))
        XCTAssertEqual(try ImageCodersManager.shared.decode(response.data).width, 8)
        let sent = server.headers(of: "/a.png")
        XCTAssertEqual(sent?["User-Agent"].first, "ImageKit/\(ImageKit.version)")
        // The default Accept lists the compiled-in modern formats, best first.
        let modern = [("image/avif", ImageFormat.avif), ("image/jxl", .jpegXL)].filter { $0.1.isDecodingSupported }
        XCTAssertEqual(
            sent?["Accept"].first, (modern.map(\.0) + ["image/webp,image/apng,image/*;q=0.8"]).joined(separator: ","))
    }

    func testARequestModifierReplacesTheAcceptHeader() async throws {
        server.route("/b.png", .init(body: png))
        var configuration = ImageDownloaderConfiguration()
        configuration.requestModifier = { request in
            var modified = request
            modified.headers["Accept"] = "image/png"
            return modified
        }
        let downloader = ImageDownloader(configuration: configuration)
        _ = try await downloader.load(server.url("/b.png"))
        XCTAssertEqual(server.headers(of: "/b.png")?["Accept"].first, "image/png")
    }

    func testFiftyConcurrentLoadsShareOneRequest() async throws {
        server.route("/shared.png", .init(body: png, chunkSize: 64, delay: .milliseconds(20)))
        let downloader = ImageDownloader()
        let url = server.url("/shared.png")
        let results = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { (try? await downloader.load(url).data.count) ?? -1 } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(results.count, 50)
        XCTAssertTrue(results.allSatisfy { $0 == Self.png.count })
        XCTAssertEqual(server.requests(to: "/shared.png"), 1)
        // A request after completion starts a new transfer.
        _ = try await downloader.load(url)
        XCTAssertEqual(server.requests(to: "/shared.png"), 2)
    }

    func testCancellingOneOfTwoCallersLeavesTheOther() throws {
        server.route("/slow.png", .init(body: png, chunkSize: 16, delay: .milliseconds(20)))
        let downloader = ImageDownloader()
        let first = expectation(description: "first cancelled")
        let second = expectation(description: "second completes")
        let token = downloader.download(ImageLoadRequest(url: server.url("/slow.png"))) { result in
            if case .failure(let error) = result {
                XCTAssertEqual(error.code, .cancelled)
            } else {
                XCTFail("expected cancelled")
            }
            first.fulfill()
        }
        downloader.download(ImageLoadRequest(url: server.url("/slow.png"))) { result in
            XCTAssertEqual((try? result.get())?.data.count, Self.png.count)
            second.fulfill()
        }
        token.cancel()
        token.cancel()  // twice: still one completion
        wait(for: [first, second], timeout: 20)
        XCTAssertEqual(server.requests(to: "/slow.png"), 1)
    }

    func testCancellingEveryCallerStopsTheTransferAndARestartWorks() throws {
        server.route("/trickle.png", .init(body: png, chunkSize: 8, delay: .milliseconds(50)))
        let downloader = ImageDownloader()
        let cancelled = expectation(description: "cancelled")
        let token = downloader.download(ImageLoadRequest(url: server.url("/trickle.png"))) { result in
            if case .failure(let error) = result { XCTAssertEqual(error.code, .cancelled) }
            cancelled.fulfill()
        }
        Thread.sleep(forTimeInterval: 0.2)
        token.cancel()
        wait(for: [cancelled], timeout: 10)
        let restarted = expectation(description: "restarted")
        downloader.download(ImageLoadRequest(url: server.url("/trickle.png"))) { result in
            XCTAssertEqual((try? result.get())?.data.count, Self.png.count)
            restarted.fulfill()
        }
        wait(for: [restarted], timeout: 30)
        XCTAssertEqual(server.requests(to: "/trickle.png"), 2)
    }

    func testStatusCodesAreTypedErrors() async throws {
        for (status, transient) in [
            (404, false), (403, false), (410, false), (500, true), (503, true), (429, true), (408, true),
        ] {
            server.route(
                "/status\(status)", .init(status: HTTPResponseStatus(statusCode: status), body: Array("no".utf8)))
            do {
                _ = try await ImageDownloader().load(server.url("/status\(status)"))
                XCTFail("\(status) should fail")
            } catch {
                XCTAssertEqual(error.code, .invalidStatusCode)
                XCTAssertEqual(error.httpStatusCode, status)
                XCTAssertEqual(error.isTransient, transient, "\(status)")
            }
        }
    }

    func testConditionalRequestGivesNotModified() async throws {
        server.route(
            "/etag.png",
            { @Sendable head in
                head.headers["If-None-Match"].first == "\"v1\""
                    ? .init(status: .notModified) : .init(headers: [("ETag", "\"v1\"")], body: Self.png)
            } as TestHTTPServer.RouteHandler)
        let downloader = ImageDownloader()
        let first = try await downloader.load(server.url("/etag.png"))
        XCTAssertFalse(first.isNotModified)
        let second = try await downloader.load(
            ImageLoadRequest(url: server.url("/etag.png"), cachedValidators: first.cacheHeaders))
        XCTAssertTrue(second.isNotModified)
        XCTAssertTrue(second.data.isEmpty)
    }

    func testRedirectsEmptyBodiesSizeLimitsAndCutConnections() async throws {
        server.route("/moved", .init(status: .found, headers: [("Location", "/a.png")]))
        server.route("/a.png", .init(body: png))
        server.route("/loop", .init(status: .found, headers: [("Location", "/loop")]))
        server.route("/empty", .init(body: []))
        server.route("/big", .init(body: [UInt8](repeating: 7, count: 100_000)))
        server.route("/big-chunked", .init(body: [UInt8](repeating: 7, count: 100_000), chunkSize: 4096, chunked: true))
        server.route(
            "/cut",
            .init(headers: [("Content-Length", "5000")], body: [UInt8](repeating: 1, count: 5000), closeAfter: 1000))
        let downloader = ImageDownloader(
            configuration: ImageDownloaderConfiguration(maxBodySize: 50_000, maxRedirects: 5))
        let redirected = try await downloader.load(server.url("/moved"))
        XCTAssertEqual(Array(redirected.data), png)
        for (path, code) in [
            ("/loop", ImageError.Code.invalidResponse), ("/empty", .invalidResponse), ("/big", .responseTooLarge),
            ("/big-chunked", .responseTooLarge), ("/cut", .connectionLost),
        ] {
            do {
                _ = try await downloader.load(server.url(path))
                XCTFail("\(path) should fail")
            } catch {
                XCTAssertEqual(error.code, code, "\(path): \(error)")
            }
        }
        do {
            _ = try await downloader.load(URL(string: "ftp://127.0.0.1/x")!)
            XCTFail("ftp is not downloadable")
        } catch {
            XCTAssertEqual(error.code, .invalidURL)
        }
    }

    func testProgressIsMonotonicAndStallsTimeOut() async throws {
        let body = [UInt8](repeating: 3, count: 40_000)
        server.route("/progress", .init(body: body, chunkSize: 4000, delay: .milliseconds(10)))
        server.route(
            "/stall",
            .init(
                headers: [("Content-Length", "4000")], body: [UInt8](repeating: 1, count: 4000), chunkSize: 100,
                delay: .seconds(30)))
        let seen = Locked<[ImageLoadProgress]>([])
        let downloader = ImageDownloader(configuration: ImageDownloaderConfiguration(timeout: 2))
        _ = try await downloader.load(ImageLoadRequest(url: server.url("/progress"))) { progress in
            seen.withLock { $0.append(progress) }
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        let reports = seen.withLock { $0 }
        XCTAssertFalse(reports.isEmpty)
        let counts = reports.map { $0.receivedBytes }
        XCTAssertEqual(counts, counts.sorted())
        XCTAssertEqual(reports.last?.expectedBytes, 40_000)
        let started = Date()
        do {
            _ = try await downloader.load(server.url("/stall"))
            XCTFail("a stalled transfer must time out")
        } catch {
            XCTAssertEqual(error.code, .timedOut)
            XCTAssertTrue(error.isTransient)
        }
        // The stall is detected within a quarter of a second of the 2 s timeout (curl's own
        // check took about 4 s more); the margin is for a loaded machine.
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 1.9)
        XCTAssertLessThan(elapsed, 4)
        // Slow but steady is not a stall: 8 pieces 0.6 s apart, each within the timeout.
        server.route(
            "/steady", .init(body: [UInt8](repeating: 2, count: 800), chunkSize: 100, delay: .milliseconds(600)))
        let steady = try await downloader.load(server.url("/steady"))
        XCTAssertEqual(steady.data.count, 800)
    }

    /// Progress is reported only when asked for, and a caller that asks joins a transfer that
    /// started without it.
    func testProgressForACallerJoiningARunningTransfer() throws {
        server.route(
            "/trickle", .init(body: [UInt8](repeating: 5, count: 30_000), chunkSize: 1000, delay: .milliseconds(10)))
        let downloader = ImageDownloader()
        let done = expectation(description: "both complete")
        done.expectedFulfillmentCount = 2
        let url = server.url("/trickle")
        downloader.download(ImageLoadRequest(url: url)) { _ in done.fulfill() }
        let sawBytes = expectation(description: "first byte counts")
        while downloader.activeCount == 0 { usleep(1000) }
        usleep(50_000)  // the transfer is running, without progress
        let seen = Locked<[Int64]>([])
        downloader.download(
            ImageLoadRequest(url: url),
            progress: { progress in
                let count = seen.withLock {
                    $0.append(progress.receivedBytes); return $0.count
                }
                if count == 1 { sawBytes.fulfill() }
            }
        ) { result in
            XCTAssertEqual(try? result.get().data.count, 30_000)
            done.fulfill()
        }
        wait(for: [sawBytes, done], timeout: 30)
        let counts = seen.withLock { $0 }
        XCTAssertEqual(counts, counts.sorted())
        XCTAssertEqual(server.requests(to: "/trickle"), 1)
    }

    func testProgressCarriesTheBodyToTheCallersThatAskForIt() throws {
        let body = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        server.route("/bytes", .init(body: body, chunkSize: 1000, delay: .milliseconds(5)))
        let downloader = ImageDownloader()
        let url = server.url("/bytes")
        let done = expectation(description: "all complete")
        done.expectedFulfillmentCount = 4
        func load(wantsBytes: Bool, decrypts: Bool = false) -> Locked<(reports: Int, bytes: Data, withBytes: Int)> {
            let seen = Locked((reports: 0, bytes: Data(), withBytes: 0))
            var request = ImageLoadRequest(url: url)
            request.deliversReceivedBytes = wantsBytes
            if decrypts { request.hooks.decryptor = { data, _ in data } }
            downloader.download(
                request,
                progress: { progress in
                    seen.withLock {
                        $0.reports += 1
                        if let bytes = progress.newBytes {
                            $0.bytes.append(bytes)
                            $0.withBytes += 1
                        }
                    }
                }
            ) { result in
                XCTAssertEqual(try? result.get().data.count, body.count)
                done.fulfill()
            }
            return seen
        }
        let first = load(wantsBytes: true)
        let plain = load(wantsBytes: false)
        let decrypting = load(wantsBytes: true, decrypts: true)
        while first.withLock({ $0.bytes.count }) < 5000 { usleep(1000) }
        let late = load(wantsBytes: true)  // joins the running transfer
        wait(for: [done], timeout: 30)
        XCTAssertEqual(server.requests(to: "/bytes"), 1, "one transfer for every caller")
        // In order, the reports' bytes are the body received so far (the rest comes with the response).
        for (name, seen) in [("first", first), ("late joiner", late)] {
            let bytes = seen.withLock { $0.bytes }
            XCTAssertGreaterThan(bytes.count, 0, name)
            XCTAssertEqual(Array(bytes), Array(body.prefix(bytes.count)), name)
        }
        XCTAssertGreaterThan(plain.withLock { $0.reports }, 0)
        XCTAssertEqual(plain.withLock { $0.withBytes }, 0, "a caller that did not ask gets no bytes")
        XCTAssertEqual(decrypting.withLock { $0.withBytes }, 0, "encrypted bytes are not the image")
    }

    func testPriorityAndLIFOWithOneSlot() throws {
        server.route("/gate", .init(body: png, chunkSize: 32, delay: .milliseconds(30)))
        for name in ["a", "b", "c", "d"] { server.route("/\(name)", .init(body: png)) }
        let order = Locked<[String]>([])
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = 5
        let downloader = ImageDownloader(
            configuration: ImageDownloaderConfiguration(maxConcurrentDownloads: 1, executionOrder: .lifo))
        func start(_ name: String, _ priority: ImageLoadPriority) {
            downloader.download(ImageLoadRequest(url: server.url("/\(name)"), priority: priority)) { _ in
                order.withLock { $0.append(name) }
                done.fulfill()
            }
        }
        start("gate", .normal)  // occupies the only slot
        start("a", .normal)
        start("b", .normal)
        start("c", .low)
        start("d", .high)
        wait(for: [done], timeout: 30)
        XCTAssertEqual(
            order.withLock { $0 }, ["gate", "d", "b", "a", "c"], "high first, then LIFO among normals, low last")
    }

    func testHooksAndDecryptor() async throws {
        server.route("/b64", .init(body: Array(Data(png).base64EncodedData())))
        server.route("/refused", .init(body: png))
        var configuration = ImageDownloaderConfiguration()
        configuration.requestModifier = { request in
            guard !request.url.path.hasSuffix("refused") else { return nil }
            var modified = request
            modified.headers["X-Test"] = "1"
            return modified
        }
        configuration.decryptor = { data, _ in Data(base64Encoded: data) }
        let downloader = ImageDownloader(configuration: configuration)
        let decoded = try await downloader.load(server.url("/b64"))
        XCTAssertEqual(Array(decoded.data), png)
        XCTAssertEqual(server.headers(of: "/b64")?["X-Test"].first, "1")
        do {
            _ = try await downloader.load(server.url("/refused"))
            XCTFail("refused by the request modifier")
        } catch {
            XCTAssertEqual(server.requests(to: "/refused"), 0)
        }
    }

    /// Handles and body buffers are recycled: every body must still be exactly its own bytes,
    /// while earlier bodies are alive and after they are gone, and nothing a request set may
    /// leak into the next one on the same handle.
    func testRecycledHandlesAndBuffersKeepTransfersApart() async throws {
        var generator = SystemRandomNumberGenerator()
        let bodies: [[UInt8]] = (0..<60).map { index in
            let size = [1, 100, 16_383, 16_384, 70_000, 130_000, 300_000][index % 7] + index
            return (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        }
        for (index, body) in bodies.enumerated() {
            server.route("/r\(index)", .init(body: body, chunked: index % 3 == 0))
        }
        let downloader = ImageDownloader(configuration: ImageDownloaderConfiguration(maxConcurrentDownloads: 4))
        let urls = bodies.indices.map { server.url("/r\($0)") }
        for round in 0..<2 {
            let received = await withTaskGroup(of: (Int, Data?).self) { group in
                for index in urls.indices {
                    let url = urls[index]
                    group.addTask { (index, try? await downloader.load(url).data) }
                }
                return await group.reduce(into: [Int: Data]()) { $0[$1.0] = $1.1 }
            }
            // All bodies of the round are alive together here: none may share memory.
            for (index, body) in bodies.enumerated() {
                XCTAssertEqual(received[index].map(Array.init), body, "round \(round), body \(index)")
            }
        }
        server.route("/with-header", .init(body: png))
        server.route("/without-header", .init(body: png))
        let single = ImageDownloader(configuration: ImageDownloaderConfiguration(maxConcurrentDownloads: 1))
        _ = try await single.load(ImageLoadRequest(url: server.url("/with-header"), headers: ["X-Only-Once": "1"]))
        _ = try await single.load(server.url("/without-header"))
        XCTAssertEqual(server.headers(of: "/with-header")?["X-Only-Once"].first, "1")
        XCTAssertEqual(server.headers(of: "/without-header")?["X-Only-Once"].isEmpty, true)
    }

    func testGzipBasicAuthAndCookiesAcrossTransfers() async throws {
        server.route("/gzip", .init(headers: [("Content-Encoding", "gzip")], body: Self.gzipStored(png)))
        server.route("/private") { head in
            let expected = "Basic " + Data("user:secret".utf8).base64EncodedString()
            return head.headers["Authorization"].first == expected
                ? .init(body: DownloaderTests.png)
                : .init(status: .unauthorized, headers: [("WWW-Authenticate", "Basic realm=\"test\"")])
        }
        server.route("/set-cookie", .init(headers: [("Set-Cookie", "session=abc123; Path=/")], body: png))
        server.route("/echo-cookie") { head in
            .init(body: Array("cookie:\(head.headers["Cookie"].joined(separator: ";"))".utf8))
        }

        let plain = ImageDownloader()
        let unzipped = try await plain.load(server.url("/gzip"))
        XCTAssertEqual(Array(unzipped.data), png, "gzip content encoding is decoded")
        XCTAssertTrue(server.headers(of: "/gzip")?["Accept-Encoding"].first?.contains("gzip") == true)
        do {
            _ = try await plain.load(server.url("/private"))
            XCTFail("no credentials: 401")
        } catch {
            XCTAssertEqual(error.httpStatusCode, 401)
        }
        _ = try await plain.load(server.url("/set-cookie"))
        let withoutJar = try await plain.load(server.url("/echo-cookie")).data
        XCTAssertEqual(String(decoding: withoutJar, as: UTF8.self), "cookie:", "cookies are off by default")

        let configured = ImageDownloader(
            configuration: ImageDownloaderConfiguration(
                credentials: (user: "user", password: "secret"),
                handlesCookies: true))
        let authorized = try await configured.load(server.url("/private")).data
        XCTAssertEqual(Array(authorized), png)
        _ = try await configured.load(server.url("/set-cookie"))
        // A later transfer (another handle or a reset one) sends the cookie from the jar.
        let withJar = try await configured.load(server.url("/echo-cookie")).data
        XCTAssertEqual(String(decoding: withJar, as: UTF8.self), "cookie:session=abc123")
    }

    /// `bytes` as a gzip member with one stored (uncompressed) deflate block: valid gzip
    /// without a compressor in the test.
    static func gzipStored(_ bytes: [UInt8]) -> [UInt8] {
        precondition(bytes.count < 65_536)
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        crc ^= 0xFFFF_FFFF
        func littleEndian32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        let length = UInt16(bytes.count)
        return [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]  // header: deflate, no flags, unknown OS
            // final stored block
            + [1, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
            + bytes + littleEndian32(crc) + littleEndian32(UInt32(bytes.count))
    }

    func testTransfersSpreadOverNetworkThreads() async throws {
        XCTAssertEqual(
            ImageDownloader.engine(for: "a.example", multiplexes: false, loads: [3, 1, 2]), 1, "plain HTTP: least busy")
        let pinned = ImageDownloader.engine(for: "a.example", multiplexes: true, loads: [0, 0, 0])
        XCTAssertEqual(
            ImageDownloader.engine(for: "A.example", multiplexes: true, loads: [5, 9, 1]), pinned, "HTTPS: by host only"
        )
        // Every thread count works end to end, with coalescing and exact bytes.
        server.route("/n.png", .init(body: png))
        for threads in [1, 2, 4] {
            let downloader = ImageDownloader(
                configuration: ImageDownloaderConfiguration(maxConcurrentDownloads: 8, networkThreads: threads))
            let urls = (0..<24).map { server.url("/n.png?\($0)") }
            let sizes = await withTaskGroup(of: Int.self) { group in
                for url in urls { group.addTask { (try? await downloader.load(url).data.count) ?? -1 } }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            XCTAssertEqual(sizes, Array(repeating: png.count, count: 24), "\(threads) threads")
        }
    }

    func testLocalLoaders() async throws {
        let manager = ImageLoadersManager()
        let data = try await manager.load(URL(string: "data:image/png;base64," + Data(png).base64EncodedString())!).data
        XCTAssertEqual(Array(data), png)
        let text = try await manager.load(URL(string: "data:,hello%20world")!).data
        XCTAssertEqual(String(decoding: text, as: UTF8.self), "hello world")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imagekit-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try await manager.load(file)
        XCTAssertEqual(Array(fromFile.data), png)
        do {
            _ = try await manager.load(URL(fileURLWithPath: "/nonexistent/imagekit.png"))
            XCTFail("missing file")
        } catch {
            XCTAssertEqual(error.code, .invalidURL)
        }
        server.route("/via-manager.png", .init(body: png))
        let remote = try await manager.load(server.url("/via-manager.png"))
        XCTAssertEqual(remote.data.count, png.count)
    }
}
