import Foundation
import NIOHTTP1
import XCTest

@testable import ImageKit

/// `imagekit fetch`, the contract item 3 of the manager's issue describes, against the
/// in-process server.
final class FetchCommandTests: XCTestCase {
    var server: TestHTTPServer!
    var cacheDirectory: URL!

    override func setUpWithError() throws {
        server = try TestHTTPServer()
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("fetch-\(UUID().uuidString)")
        let jpeg = try ImageCodersManager.shared.encode(
            DecodedImage(
                frames: [
                    ImageFrame(
                        bitmap: {
                            let buffer = try! PixelBuffer(width: 300, height: 200)
                            buffer.baseAddress.initializeMemory(as: UInt8.self, repeating: 128, count: buffer.byteCount)
                            return buffer.freeze(isOpaque: true)
                        }())
                ], format: .jpeg), as: .jpeg, options: .default)
        server.route("/photo.jpg") { head in
            if head.headers["If-None-Match"].first == "\"p1\"" {
                return .init(status: .notModified, headers: [("ETag", "\"p1\"")])
            }
            return .init(headers: [("ETag", "\"p1\""), ("Content-Type", "image/jpeg")], body: Array(jpeg))
        }
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: cacheDirectory)
    }

    /// Runs `imagekit fetch … --json`; returns the exit status and one object per URL.
    func fetch(_ arguments: [String]) throws -> (Int32, [[String: Any]]) {
        let (status, output) = try ImageKitTool.run(
            ["fetch", "--json", "--cache-dir", cacheDirectory.path] + arguments)
        return (status, ImageKitTool.jsonLines(output))
    }

    func testCacheThumbnailRefreshAndBlacklist() throws {
        let url = server.url("/photo.jpg").absoluteString
        var (status, objects) = try fetch([url])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(objects.first?["cacheType"] as? String, "none")
        XCTAssertEqual(objects.first?["status"] as? Int, 200)
        XCTAssertEqual(objects.first?["width"] as? Int, 300)
        XCTAssertEqual(objects.first?["format"] as? String, "jpeg")
        XCTAssertTrue(objects.first?["error"] is NSNull)

        (status, objects) = try fetch([url])
        XCTAssertEqual(objects.first?["cacheType"] as? String, "disk", "a second invocation is served from disk")
        XCTAssertTrue(objects.first?["status"] is NSNull)
        XCTAssertEqual(server.requests(to: "/photo.jpg"), 1)

        (status, objects) = try fetch([url, "--thumbnail", "64"])
        XCTAssertEqual(objects.first?["width"] as? Int, 64)
        XCTAssertEqual(server.requests(to: "/photo.jpg"), 1, "the thumbnail comes from the cached original")

        (status, objects) = try fetch([url, "--refresh"])
        XCTAssertEqual(objects.first?["status"] as? Int, 304)
        XCTAssertEqual(server.requests(to: "/photo.jpg"), 2)
        XCTAssertEqual(server.headers(of: "/photo.jpg")?["If-None-Match"].first, "\"p1\"")

        let missing = server.url("/missing.jpg").absoluteString
        (status, objects) = try fetch([missing, missing, "--sequential"])
        XCTAssertEqual(status, 1)
        XCTAssertEqual(objects.count, 2)
        XCTAssertEqual((objects[0]["error"] as? [String: Any])?["code"] as? String, "invalidStatusCode")
        XCTAssertEqual(objects[0]["status"] as? Int, 404)
        XCTAssertEqual((objects[1]["error"] as? [String: Any])?["code"] as? String, "blacklisted")
        XCTAssertEqual(server.requests(to: "/missing.jpg"), 1)

        // A cache-only miss is a failure the CLI reports (exit 1, error.code notCached).
        (status, objects) = try fetch([server.url("/never.jpg").absoluteString, "--from-cache-only"])
        XCTAssertEqual(status, 1)
        XCTAssertEqual(objects.first?["cacheType"] as? String, "none")
        XCTAssertEqual((objects.first?["error"] as? [String: Any])?["code"] as? String, "notCached")
        XCTAssertEqual(server.requests(to: "/never.jpg"), 0)
        // … and a cache-only hit is not.
        (status, objects) = try fetch([url, "--from-cache-only"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(objects.first?["cacheType"] as? String, "disk")
    }

    /// `--deny-private` refuses every spelling of a loopback address and a redirect to one, and
    /// `--allow-address` lets the listed network through; the forbidden listener on 127.0.0.2
    /// sees no connection.
    func testDenyPrivateRefusesLoopbackFormsAndRedirects() throws {
        let forbidden = try TestHTTPServer(host: "127.0.0.2")
        defer { forbidden.stop() }
        forbidden.route("/secret.jpg", .init(body: Array("secret".utf8)))
        let port = forbidden.port
        server.route("/hop") { _ in
            .init(status: .found, headers: [("Location", "http://127.0.0.2:\(port)/secret.jpg")])
        }
        let photo = server.url("/photo.jpg").absoluteString
        let forms = [
            photo,  // 127.0.0.1 itself
            "http://127.0.0.2:\(port)/secret.jpg",  // another loopback address
            "http://2130706434:\(port)/secret.jpg",  // decimal 127.0.0.2
            "http://0177.0.0.2:\(port)/secret.jpg",  // octal
            "http://0x7f.0.0.2:\(port)/secret.jpg",  // hex
            "http://[::ffff:127.0.0.2]:\(port)/secret.jpg",  // IPv4-mapped IPv6
            "http://0.0.0.0:\(port)/secret.jpg",  // unspecified (Linux connects it to this host)
            "http://[::1]:\(port)/secret.jpg",  // IPv6 loopback
            "http://images.test:\(port)/secret.jpg",  // a name that resolves to loopback
        ]
        for form in forms {
            let (status, objects) = try fetch([form, "--deny-private", "--resolve", "images.test:\(port):127.0.0.2"])
            XCTAssertEqual(status, 1, form)
            XCTAssertEqual((objects.first?["error"] as? [String: Any])?["code"] as? String, "forbiddenAddress", form)
        }
        // The origin is allowed; its redirect to 127.0.0.2 is not.
        let (status, objects) = try fetch([
            server.url("/hop").absoluteString, "--deny-private", "--allow-address", "127.0.0.1/32",
        ])
        XCTAssertEqual(status, 1)
        XCTAssertEqual((objects.first?["error"] as? [String: Any])?["code"] as? String, "forbiddenAddress")
        XCTAssertEqual(server.requests(to: "/hop"), 1)
        XCTAssertEqual(forbidden.connectionCount, 0, "no packet reaches a refused address")
        // Allowed when listed: the address, or the host name.
        var (allowedStatus, allowed) = try fetch([photo, "--deny-private", "--allow-address", "127.0.0.0/30"])
        XCTAssertEqual(allowedStatus, 0)
        XCTAssertEqual(allowed.first?["width"] as? Int, 300)
        (allowedStatus, allowed) = try fetch([
            "http://images.test:\(server.port)/photo.jpg", "--deny-private", "--allow-host", "images.test",
            "--resolve", "images.test:\(server.port):127.0.0.1",
        ])
        XCTAssertEqual(allowedStatus, 0)
        XCTAssertTrue(allowed.first?["error"] is NSNull)
    }
}
