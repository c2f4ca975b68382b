#if Serve
import Foundation
import HTTPTypes
import Hummingbird
import ImageKit
import NIOCore
@testable import ImageKitServer
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `imagekit serve` over real HTTP on loopback: the options and their variables, signatures,
/// caching headers, metrics and the access log, every bad input's status (the service still
/// serving afterwards), the address guard with a listener on 127.0.0.2 that must see nothing,
/// and a graceful SIGTERM under load.
final class ServeCommandTests: XCTestCase {
    var origin: TestHTTPServer!
    var host: String { "127.0.0.1:\(origin.port)" }
    let allowOrigin = ["--allow-address", "127.0.0.1/32"]

    override func setUpWithError() throws {
        origin = try TestHTTPServer()
        // A strong ETag: the service names the source by it instead of hashing the bytes (the
        // in-process ImageServiceTests' origin sends none: the digest path).
        origin.route(
            "/a.jpg",
            .init(
                headers: [
                    ("Content-Type", "image/jpeg"), ("Last-Modified", "Tue, 03 Nov 2026 10:00:00 GMT"),
                    ("ETag", "\"a-v1\""),
                ],
                body: ImageServiceTests.jpeg))
    }

    override func tearDown() {
        origin.stop()
    }

    /// `/slow.jpg` on the origin: the test JPEG in `chunks` pieces, `delay` before each.
    private func routeSlowJPEG(chunks: Int, delay: TimeAmount) {
        origin.route(
            "/slow.jpg",
            .init(body: ImageServiceTests.jpeg, chunkSize: max(1, ImageServiceTests.jpeg.count / chunks), delay: delay))
    }

    func testRefusesToStartWithoutAKeyOrWithABadOption() throws {
        for arguments in [
            ["serve", "--port", "0"], ["serve", "--port", "0", "--allow-unsafe", "--allow-address", "not-a-cidr"],
            ["serve", "--port", "0", "--key", "abcd"],
            ["serve", "--port", "0", "--allow-unsafe", "--autoquality", "fast:70"],
            ["serve", "--port", "0", "--allow-unsafe", "--autoquality-format-min", "avif"],
        ] {
            let (status, _, message) = try ImageKitTool.run(arguments, capturing: .standardError)
            XCTAssertEqual(status, 2, arguments.joined(separator: " "))
            XCTAssertFalse(message.isEmpty)
            if arguments.count == 3 { XCTAssertTrue(message.contains("no signing key"), message) }
        }
    }

    func testOptionsComeFromTheEnvironmentAndAFlagWins() throws {
        let server = try ServeProcess(
            ["--workers", "1"],
            environment: [
                "IMAGEKIT_SERVE_THUMBOR_KEY": "old-key,new-key", "IMAGEKIT_SERVE_ALLOW_ADDRESS": "127.0.0.1/32",
                "IMAGEKIT_SERVE_WORKERS": "3", "IMAGEKIT_SERVE_QUEUE": "5",
            ])
        defer { server.stop() }
        XCTAssertTrue(
            server.output.contains("grammars: thumbor (signed); cache: none (memory only); workers: 1, queue: 5"),
            server.output)
        let path = "fit-in/64x64/\(host)/a.jpg"
        for key in ["old-key", "new-key"] {
            let signed = try server.request("/" + ThumborSigner(keys: [key]).sign(path) + "/" + path)
            XCTAssertEqual(signed.status, 200, key)
            XCTAssertEqual(
                signed.headers["last-modified"], "Tue, 03 Nov 2026 10:00:00 GMT", "passed on without a disk cache too")
        }
        XCTAssertEqual(try server.request("/unsafe/" + path).status, 403, "no --allow-unsafe")
        XCTAssertEqual(
            try server.request("/" + ThumborSigner(keys: ["other"]).sign(path) + "/" + path).json["error"],
            "invalidSignature")
        XCTAssertFalse(server.output.contains("old-key"), "the access log never shows keys")
        // The text log keeps swift-log's StreamLogHandler layout: time, level, label, the
        // metadata sorted by key, the source, the message.
        let pattern = try Regex(
            #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} info imagekit\.access: bytes=\d+ cache=\S+ "#
                + #"duration_ms=\d+\.\d\d grammar=thumbor method=GET path=/-/fit-in/64x64/\S+ status=200 "#
                + #"\[ImageKitServer\] request$"#)
        let deadline = Date().addingTimeInterval(5)
        func accessLines() -> [Substring] {
            server.output.split(separator: "\n").filter { $0.contains("imagekit.access") }
        }
        while accessLines().count < 2, Date() < deadline { usleep(10_000) }
        let lines = accessLines()
        XCTAssertGreaterThanOrEqual(lines.count, 2, server.output)
        for line in lines.prefix(2) { XCTAssertNotNil(line.wholeMatch(of: pattern), String(line)) }
    }

    /// `--autoquality` (here from its `IMAGEKIT_SERVE_` variable): the quality chosen is in
    /// `X-ImageKit-Quality` and in the access line.
    func testAutoqualityHeaderAndAccessLog() throws {
        let server = try ServeProcess(
            ["--allow-unsafe"] + allowOrigin, environment: ["IMAGEKIT_SERVE_AUTOQUALITY": "ssimulacra2:75"])
        defer { server.stop() }
        let answer = try server.request("/unsafe/\(host)/a.jpg")
        XCTAssertEqual(answer.status, 200)
        let quality = try XCTUnwrap(answer.headers["x-imagekit-quality"])
        XCTAssertTrue(quality.contains("ssimulacra2=") && quality.contains("encodes="), quality)
        let deadline = Date().addingTimeInterval(5)
        while !server.output.contains("quality=\(quality)"), Date() < deadline { usleep(10_000) }
        XCTAssertTrue(server.output.contains("quality=\(quality)"), server.output)
    }

    func testImagesHeadersCachingMetricsAndTheAccessLog() throws {
        let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
        let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServeProcess(
            allowOrigin + [
                "--key", key, "--salt", salt, "--allow-unsafe", "--cache-dir", directory.path,
                "--log-format", "json", "--preset", "small=rs:fit:32:32",
            ])
        defer { server.stop() }
        XCTAssertEqual(try server.request("/healthz").status, 200)
        XCTAssertEqual(try server.request("/healthz", method: "HEAD").status, 200)

        let path = "/unsafe/fit-in/256x256/\(host)/a.jpg"
        let first = try server.request(path)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.headers["content-type"], "image/jpeg")
        XCTAssertEqual(first.headers["content-length"], String(first.body.count))
        XCTAssertEqual(first.headers["cache-control"], "public, max-age=31536000")
        XCTAssertEqual(first.headers["last-modified"], "Tue, 03 Nov 2026 10:00:00 GMT", "passed on from the origin")
        XCTAssertEqual(first.headers["vary"], "Accept")
        XCTAssertEqual(
            first.headers["connection"], "close",
            "the request said close: so does the answer (a keep-alive proxy would reuse the connection)")
        let image = try ImageCodersManager.shared.decode(Data(first.body))
        XCTAssertEqual("\(image.width)x\(image.height)", "256x192")
        let etag = try XCTUnwrap(first.headers["etag"])

        let head = try server.request(path, method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)
        XCTAssertEqual(head.headers["content-length"], String(first.body.count))
        let notModified = try server.request(path, headers: ["If-None-Match": etag])
        XCTAssertEqual(notModified.status, 304)
        XCTAssertTrue(notModified.body.isEmpty)
        let webp = try server.request(path, headers: ["Accept": "image/webp,*/*"])
        XCTAssertEqual(webp.headers["content-type"], "image/webp")
        XCTAssertEqual(origin.requests(to: "/a.jpg"), 1, "one fetch: the source is cached on disk")

        let imgproxyPath = "/pr:small/plain/http://\(host)/a.jpg@png"
        let signed = try server.request(
            "/" + ImgproxySigner(pairs: [(key: key, salt: salt)]).sign(imgproxyPath) + imgproxyPath)
        XCTAssertEqual(signed.status, 200)
        XCTAssertEqual(signed.headers["content-type"], "image/png")
        XCTAssertEqual(try ImageCodersManager.shared.decode(Data(signed.body)).width, 32)
        let info = try server.request("/info/_/w:100/plain/http://\(host)/a.jpg")
        XCTAssertEqual(info.status, 200)
        XCTAssertEqual(info.headers["content-type"], "application/json")
        XCTAssertEqual(try server.request("/unsafe/\(host)/a.jpg", method: "POST").status, 405)

        let metrics = String(decoding: try server.request("/metrics").body, as: UTF8.self)
        for name in [
            "imagekit_requests_total{grammar=\"thumbor\",status=\"200\"}",
            "imagekit_requests_total{grammar=\"imgproxy\",status=\"200\"}",
            "imagekit_request_duration_seconds_bucket", "imagekit_stage_duration_seconds_count{stage=\"decode\"}",
            "imagekit_stage_duration_seconds_count{stage=\"fetch\"}",
            "imagekit_stage_duration_seconds_count{stage=\"queue\"}",
            "imagekit_cache_hits_total{tier=\"origin\"}", "imagekit_cache_hits_total{tier=\"result_memory\"}",
            "imagekit_cache_hits_total{tier=\"source_disk\"}", "imagekit_origin_bytes_total",
            "imagekit_requests_in_flight",
            "imagekit_queue_length", "imagekit_process_resident_memory_bytes", "imagekit_downloads_total",
        ] {
            XCTAssertTrue(metrics.contains(name), "\(name) missing from /metrics")
        }
        // A test build is given no commit: the label says so rather than being left out.
        XCTAssertTrue(
            metrics.contains("imagekit_build_info{version=\"\(ImageKit.version)\",commit=\"unknown\"} 1"), metrics)

        // The access line is written after the response, and the server's output reaches this
        // process through a pipe: on a busy machine the last line can arrive a moment later.
        func accessLines() -> [[String: Any]] {
            server.output.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["label"] as? String == "imagekit.access" }
        }
        let deadline = Date().addingTimeInterval(5)
        while accessLines().count < 7, Date() < deadline { usleep(10_000) }
        let access = accessLines()
        XCTAssertEqual(access.count, 7, server.output)  // healthz and metrics are not logged
        let signedLine = try XCTUnwrap(access.first { ($0["path"] as? String)?.hasSuffix("a.jpg@png") == true })
        XCTAssertEqual(
            signedLine["path"] as? String, "/-/pr:small/plain/http://\(host)/a.jpg@png", "the signature is not logged")
        XCTAssertEqual(signedLine["status"] as? Int, 200)
        XCTAssertEqual(signedLine["method"] as? String, "GET")
        XCTAssertNotNil(signedLine["duration_ms"])
        XCTAssertEqual(access.first { $0["status"] as? Int == 304 }?["cache"] as? String, "result_memory")
        XCTAssertFalse(server.output.contains(key) || server.output.contains(salt))
    }

    func testBadInputsGetTheirStatusAndTheServiceKeepsServing() throws {
        let jpeg = ImageServiceTests.jpeg
        origin.route("/truncated.jpg", .init(body: Array(jpeg.prefix(jpeg.count / 2))))
        origin.route(
            "/garbage.jpg", .init(body: (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }))
        var bomb: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 1, 0x86, 0xA0, 0, 1,
            0x86, 0xA0, 8, 6, 0, 0, 0,
        ]
        bomb += Array(repeating: 0, count: 68)
        origin.route("/bomb.png", .init(body: bomb))
        for hop in 0..<20 {
            origin.route("/loop/\(hop)", .init(status: .found, headers: [("Location", "/loop/\(hop + 1)")]))
        }
        origin.route("/loop/20", .init(body: jpeg))
        let forbidden = try TestHTTPServer(host: "127.0.0.2")
        defer { forbidden.stop() }
        forbidden.route("/a.jpg", .init(body: jpeg))
        origin.route(
            "/to-forbidden", .init(status: .found, headers: [("Location", "http://127.0.0.2:\(forbidden.port)/a.jpg")]))
        let drip = try RawTCPServer { socket in
            guard
                RawTCPServer.write(
                    socket, "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 100000\r\n\r\n")
            else { return }
            for byte in jpeg.prefix(200) {
                guard RawTCPServer.write(socket, [byte]) else { return }
                usleep(100_000)
            }
        }
        defer { drip.stop() }
        let huge = try RawTCPServer { socket in
            _ = RawTCPServer.write(
                socket, "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 2147483648\r\n\r\n")
            _ = RawTCPServer.write(socket, Array(jpeg.prefix(1000)))
        }
        defer { huge.stop() }
        let server = try ServeProcess(
            allowOrigin + ["--allow-unsafe", "--timeout", "1", "--max-source-bytes", "1000000"])
        defer { server.stop() }

        let port = forbidden.port
        let cases: [(String, Int, String)] = [
            // A source cut short is refused, not served half grey: a CDN would keep the broken image for a year.
            ("/unsafe/100x100/\(host)/truncated.jpg", 415, "truncatedImage"),
            ("/unsafe/100x100/\(host)/garbage.jpg", 415, "notAnImage"),
            ("/unsafe/100x100/\(host)/bomb.png", 422, "tooManyPixels"),
            ("/unsafe/100x100/\(host)/missing.jpg", 404, "sourceNotFound"),
            ("/unsafe/100x100/127.0.0.1:\(drip.port)/slow.jpg", 504, "originTimeout"),
            ("/unsafe/100x100/127.0.0.1:\(huge.port)/huge.jpg", 413, "sourceTooLarge"),
            ("/unsafe/100x100/\(host)/loop/0", 502, "originFailed"),
            ("/unsafe/100x100/\(host)/to-forbidden", 403, "addressNotAllowed"),
            ("/unsafe/100x100/127.0.0.2:\(port)/a.jpg", 403, "addressNotAllowed"),
            ("/unsafe/100x100/2130706434:\(port)/a.jpg", 403, "addressNotAllowed"),
            ("/unsafe/100x100/0x7f000002:\(port)/a.jpg", 403, "addressNotAllowed"),
            ("/unsafe/100x100/0177.0.0.2:\(port)/a.jpg", 403, "addressNotAllowed"),
            ("/unsafe/100x100/[::1]:\(port)/a.jpg", 403, "addressNotAllowed"),
            ("/unsafe/100x100/0.0.0.0:\(port)/a.jpg", 403, "addressNotAllowed"),
            ("/unsafe/100x100/filters:sepia()/\(host)/a.jpg", 400, "unknownFilter"),
            ("/nonsense/\(host)/a.jpg", 400, "malformedURL"),
            ("/_/rs:fit:10:10/\(String(repeating: "%", count: 30))", 400, "malformedURL"),
        ]
        for (path, status, code) in cases {
            let answer = try server.request(path)
            XCTAssertEqual(answer.status, status, "\(path): \(String(decoding: answer.body, as: UTF8.self))")
            if !code.isEmpty {
                XCTAssertEqual(answer.headers["content-type"], "application/json", path)
                XCTAssertEqual(answer.json["error"], code, path)
                XCTAssertNotNil(answer.json["message"], path)
            }
        }
        XCTAssertEqual(forbidden.connectionCount, 0, "nothing reached the listener on 127.0.0.2")
        XCTAssertEqual(try server.request("/healthz").status, 200)
        XCTAssertEqual(try server.request("/unsafe/100x100/\(host)/a.jpg").status, 200, "still serving")
        XCTAssertTrue(server.process.isRunning)
    }

    /// `--timeout` is one deadline for a source, retries included (thumbor's
    /// `HTTP_LOADER_REQUEST_TIMEOUT`): an origin that stalls after its headers, or drips a byte
    /// every 250 ms, gets its 504 within the timeout and a second, not after one timeout per
    /// attempt. An origin that fails at once is still retried.
    func testTimeoutIsOneDeadlineForTheWholeFetchWithRetries() throws {
        let jpeg = ImageServiceTests.jpeg
        let attempts = Locked([String: Int]())
        func counting(_ name: String, _ respond: @escaping @Sendable (Int32) -> Void) throws -> RawTCPServer {
            try RawTCPServer { socket in
                attempts.withLock { $0[name, default: 0] += 1 }
                respond(socket)
            }
        }
        let stall = try counting("stall") { socket in
            guard
                RawTCPServer.write(
                    socket, "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 5000\r\n\r\n")
            else { return }
            usleep(6_000_000)
        }
        defer { stall.stop() }
        let drip = try counting("drip") { socket in
            guard
                RawTCPServer.write(
                    socket, "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 100000\r\n\r\n")
            else { return }
            for byte in jpeg.prefix(24) {
                guard RawTCPServer.write(socket, [byte]) else { return }
                usleep(250_000)
            }
        }
        defer { drip.stop() }
        let failing = try counting("failing") { socket in
            _ = RawTCPServer.write(socket, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        }
        defer { failing.stop() }
        let server = try ServeProcess(allowOrigin + ["--allow-unsafe", "--timeout", "2"])
        defer { server.stop() }

        for (name, port) in [("stall", stall.port), ("drip", drip.port)] {
            let started = Date()
            let answer = try server.request("/unsafe/100x100/127.0.0.1:\(port)/\(name).jpg")
            let elapsed = Date().timeIntervalSince(started)
            XCTAssertEqual(answer.status, 504, name)
            XCTAssertEqual(answer.json["error"], "originTimeout", name)
            XCTAssertLessThan(elapsed, 3, "\(name): one 2 s deadline for every attempt, not one per attempt")
            XCTAssertEqual(attempts.withLock { $0[name] }, 1, "\(name): no time was left for a retry")
        }
        let answer = try server.request("/unsafe/100x100/127.0.0.1:\(failing.port)/failing.jpg")
        XCTAssertEqual(answer.status, 502)
        XCTAssertEqual(attempts.withLock { $0["failing"] }, 3, "a quick failure is retried twice within the deadline")
    }

    func testSIGTERMLetsThirtyTwoRequestsInFlightFinish() throws {
        // A source that takes about 1.5 s to arrive: 32 different thumbnails of it wait for it together.
        routeSlowJPEG(chunks: 25, delay: .milliseconds(60))
        let server = try ServeProcess(
            allowOrigin + ["--allow-unsafe", "--workers", "2", "--queue", "64", "--grace", "20"])
        let port = server.port, host = self.host
        let statuses = Locked([Int]())
        let group = DispatchGroup()
        for index in 0..<32 {
            // A thread each: Dispatch's global queue runs only a core's worth of blocking calls at once.
            group.enter()
            Thread.detachNewThread {
                let status =
                    (try? HTTPAnswer.fetch(port: port, path: "/unsafe/\(40 + index)x0/\(host)/slow.jpg").status) ?? -1
                statuses.withLock { $0.append(status) }
                group.leave()
            }
        }
        // Wait until the service itself counts 32 requests in flight, then SIGTERM.
        let deadline = Date().addingTimeInterval(20)
        var inFlight = 0.0
        while Date() < deadline {
            let metrics = String(decoding: (try? server.request("/metrics").body) ?? [], as: UTF8.self)
            inFlight =
                metrics.split(separator: "\n").first { $0.hasPrefix("imagekit_requests_in_flight ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            if inFlight >= 32 { break }
            usleep(20_000)
        }
        XCTAssertEqual(inFlight, 32)
        let status = server.stop(SIGTERM)
        group.wait()
        XCTAssertEqual(status, 0, server.output)
        XCTAssertEqual(statuses.withLock { $0 }, Array(repeating: 200, count: 32))
        XCTAssertThrowsError(try HTTPAnswer.fetch(port: port, path: "/healthz"), "the listener is closed")
    }

    func testHealthIsAnsweredOnTheConnectionAndPipelinedAnswersKeepTheirOrder() throws {
        routeSlowJPEG(chunks: 4, delay: .milliseconds(50))
        let server = try ServeProcess(allowOrigin + ["--allow-unsafe", "--health-port", "0"])
        defer { server.stop() }
        // The health listener the startup line names answers too.
        let healthPort = try XCTUnwrap(
            server.output.firstMatch(of: #/; health: http://127\.0\.0\.1:(\d+)/healthz;/#).flatMap { Int($0.1) },
            server.output)
        XCTAssertNotEqual(healthPort, server.port)
        XCTAssertEqual(try HTTPAnswer.fetch(port: healthPort, path: "/healthz").json["status"], "serving")
        // Two probes on one kept-alive connection, then a slow thumbnail with a probe pipelined
        // behind it: the probe's answer must come after the image's (HTTP/1.1 answers in order).
        let probe = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
        let image = "GET /unsafe/64x0/\(host)/slow.jpg HTTP/1.1\r\nHost: a\r\n\r\n"
        let last = "HEAD /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        var received = try HTTPAnswer.exchange(port: server.port, Array((probe + probe + image + last).utf8))[...]
        // Split the stream by each head's Content-Length (the last answer, to a HEAD, has no body).
        var answers: [(status: String, type: String, body: [UInt8])] = []
        while let end = received.indices.dropLast(3).first(where: { received[$0...$0 + 3] == [13, 10, 13, 10] }) {
            let lines = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
            func field(_ name: String) -> String {
                lines.first { $0.lowercased().hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
                    ?? ""
            }
            let length = answers.count == 3 ? 0 : Int(field("content-length")) ?? 0
            answers.append((lines[0], field("content-type"), Array(received[(end + 4)..<(end + 4 + length)])))
            received = received[(end + 4 + length)...]
        }
        XCTAssertTrue(received.isEmpty, "nothing after the last answer")
        XCTAssertEqual(answers.map(\.status), Array(repeating: "HTTP/1.1 200 OK", count: 4))
        XCTAssertEqual(answers.map(\.type), ["application/json", "application/json", "image/jpeg", "application/json"])
        XCTAssertEqual(answers.map { String(decoding: $0.body, as: UTF8.self) }[0], #"{"status":"serving"}"#)
        XCTAssertEqual(try ImageCodersManager.shared.decode(Data(answers[2].body)).width, 64)
    }

    func testHealthAnswers503WhileDraining() {
        let health = ServiceHealth()
        XCTAssertEqual(ImageServiceRoutes.healthResponse(health, isHead: false).status.code, 200)
        health.startDraining()
        let draining = ImageServiceRoutes.healthResponse(health, isHead: false)
        XCTAssertEqual(draining.status.code, 503)
        XCTAssertEqual(draining.headers[.retryAfter], "1")
    }
}
#endif
