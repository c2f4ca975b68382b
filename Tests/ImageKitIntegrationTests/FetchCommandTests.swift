import Foundation
@testable import ImageKit
import NIOHTTP1
import XCTest

/// `imagekit fetch`, the contract item 3 of the manager's issue describes, against the
/// in-process server.
final class FetchCommandTests: XCTestCase {
    var server: TestHTTPServer!
    var cacheDirectory: URL!

    override func setUpWithError() throws {
        server = try TestHTTPServer()
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("fetch-\(UUID().uuidString)")
        let jpeg = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: {
                let buffer = try! PixelBuffer(width: 300, height: 200)
                buffer.baseAddress.initializeMemory(as: UInt8.self, repeating: 128, count: buffer.byteCount)
                return buffer.freeze(isOpaque: true)
            }())], format: .jpeg), as: .jpeg, options: .default)
        server.route("/photo.jpg") { head in
            if head.headers["If-None-Match"].first == "\"p1\"" { return .init(status: .notModified, headers: [("ETag", "\"p1\"")]) }
            return .init(headers: [("ETag", "\"p1\""), ("Content-Type", "image/jpeg")], body: Array(jpeg))
        }
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: cacheDirectory)
    }

    /// Runs `imagekit fetch … --json`; returns the exit status and one object per URL.
    func fetch(_ arguments: [String]) throws -> (Int32, [[String: Any]]) {
        let (status, output) = try ImageKitTool.run(["fetch", "--json", "--cache-dir", cacheDirectory.path] + arguments)
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

        (status, objects) = try fetch([server.url("/never.jpg").absoluteString, "--from-cache-only"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(objects.first?["cacheType"] as? String, "none")
        XCTAssertEqual(server.requests(to: "/never.jpg"), 0)
    }
}
