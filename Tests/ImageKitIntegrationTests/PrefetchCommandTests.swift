import Foundation
import XCTest

@testable import ImageKit

/// `imagekit prefetch`, the contract item 3 of the prefetcher's issue describes, against the
/// in-process server.
final class PrefetchCommandTests: XCTestCase {
    var server: TestHTTPServer!
    var directory: URL!

    override func setUpWithError() throws {
        server = try TestHTTPServer()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("prefetch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func run(_ arguments: [String]) throws -> (Int32, String) { try ImageKitTool.run(arguments) }

    func testHundredURLsFiveMissingThenAllFromDisk() throws {
        let buffer = try PixelBuffer(width: 64, height: 48)
        for index in 0..<buffer.byteCount {
            buffer.baseAddress.storeBytes(of: UInt8(truncatingIfNeeded: index * 7), toByteOffset: index, as: UInt8.self)
        }
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(
                frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: false))],
                format: .png), as: .png, options: .default)
        var good: [String] = []
        var all: [String] = []
        for index in 0..<100 {
            let path = "/img\(index).png"
            if index % 20 != 7 {
                // Two pieces 5 ms apart, so that the loads overlap and the limit is tested.
                server.route(
                    path,
                    .init(
                        headers: [("Content-Type", "image/png")], body: Array(png),
                        chunkSize: png.count / 2 + 1, delay: .milliseconds(5)))
                good.append(server.url(path).absoluteString)
            }
            all.append(server.url(path).absoluteString)
        }
        XCTAssertEqual(good.count, 95)
        let list = directory.appendingPathComponent("urls.txt")
        try ("# one hundred URLs\n" + all.joined(separator: "\n") + "\n\n").write(
            to: list, atomically: true, encoding: .utf8)
        let cache = directory.appendingPathComponent("cache").path

        let (status, output) = try run([
            "prefetch", "--urls", list.path, "--cache-dir", cache, "--concurrency", "3", "--json",
        ])
        XCTAssertEqual(status, 0, "skipped URLs are counted, not an error")
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], output)
        XCTAssertEqual(summary["total"] as? Int, 100)
        XCTAssertEqual(summary["finished"] as? Int, 100)
        XCTAssertEqual(summary["skipped"] as? Int, 5)
        XCTAssertNotNil(summary["seconds"] as? Double)
        XCTAssertLessThanOrEqual(server.maxConcurrentRequests, 3, "never more than 3 requests at once")
        XCTAssertGreaterThanOrEqual(server.maxConcurrentRequests, 2, "the limit is used")
        let requests = (0..<100).reduce(0) { $0 + server.requests(to: "/img\($1).png") }
        XCTAssertEqual(requests, 100)

        // Everything that loaded is on disk: fetch makes no request.
        let (fetchStatus, fetchOutput) = try run(["fetch", "--json", "--cache-dir", cache] + good)
        XCTAssertEqual(fetchStatus, 0)
        let objects = ImageKitTool.jsonLines(fetchOutput)
        XCTAssertEqual(objects.count, 95)
        XCTAssertTrue(objects.allSatisfy { $0["cacheType"] as? String == "disk" })
        XCTAssertEqual((0..<100).reduce(0) { $0 + server.requests(to: "/img\($1).png") }, 100, "no request")

        // The plain summary line.
        let (again, line) = try run(["prefetch", "--cache-dir", cache, good[0], good[1]])
        XCTAssertEqual(again, 0)
        XCTAssertTrue(line.hasPrefix("prefetched 2 of 2 URLs (0 skipped)"), line)
    }

    func testBadArgumentsExitWithStatus2() throws {
        let cache = directory.appendingPathComponent("cache").path
        for arguments in [
            ["prefetch", "--cache-dir", cache],
            ["prefetch", "--concurrency", "0", "--cache-dir", cache, "http://127.0.0.1:1/a.png"],
            ["prefetch", "--urls", directory.appendingPathComponent("missing.txt").path, "--cache-dir", cache],
            ["prefetch", "--cache-dir", cache, "not a url"],
            ["prefetch", "--no-such-option"],
        ] {
            XCTAssertEqual(try run(arguments).0, 2, arguments.joined(separator: " "))
        }
    }
}
