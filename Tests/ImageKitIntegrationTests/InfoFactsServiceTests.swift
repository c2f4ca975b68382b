import Crypto
import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// imgproxy's `/info` placeholders and colours (`bh`, `th`, `avg`, `p`, `ph`): its JSON spellings,
/// computed on a 100-px decode-time thumbnail (the library's functions on the same pixels), for
/// images and for videos.
final class InfoFactsServiceTests: XCTestCase {
    func testInfoAnswersPlaceholdersAndColours() async throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("thumbor/integration-images")
        let jpeg = try Data(contentsOf: folder.appendingPathComponent("gradient.jpg"))
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        origin.route("/photo.jpg", .init(body: [UInt8](jpeg)))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("info-facts-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let source = "http://127.0.0.1:\(origin.port)/photo.jpg"

        let response = await service.handle(
            method: "GET", path: "/info/insecure/bh:4:3/th:1/avg:1/p:5/ph:1/plain/\(source)", headers: [:])
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        var options = ImageDecodingOptions()
        options.thumbnailPixelSize = PixelSize(width: 100, height: 100)
        options.firstFrameOnly = true
        let small = try ImageCodersManager.shared.decode(jpeg, options: options).frames[0].bitmap
        XCTAssertLessThanOrEqual(max(small.width, small.height), 100)
        XCTAssertEqual(object["blurhash"] as? String, try small.blurHash(componentsX: 4, componentsY: 3))
        XCTAssertEqual(
            object["thumb_hash"] as? String, try small.thumbHash().map { String(format: "%02X", $0) }.joined())
        let average = small.averageColor()
        XCTAssertEqual(
            object["average"] as? [String: Int],
            ["R": Int(average.red), "G": Int(average.green), "B": Int(average.blue), "A": 255])
        let palette = try XCTUnwrap(object["palette"] as? [[String: Int]])
        XCTAssertEqual(palette.count, 5)
        XCTAssertEqual(Set(palette.map { $0.keys.sorted() }), [["A", "B", "G", "R"]])
        let hash = try XCTUnwrap(object["perceptual_hash"] as? String)
        XCTAssertEqual(hash.count, 16)
        XCTAssertEqual(UInt64(hash, radix: 16), try small.perceptualHash())

        // Asked for nothing: none of them; the long names read the same.
        let plain = await service.handle(method: "GET", path: "/info/insecure/plain/\(source)", headers: [:])
        let bare = try XCTUnwrap(try JSONSerialization.jsonObject(with: plain.body) as? [String: Any])
        XCTAssertNil(bare["blurhash"])
        XCTAssertEqual(bare["operations"] as? String, "rules:imgproxy;meta:1")
        XCTAssertEqual(object["operations"] as? String, "rules:imgproxy;meta:1;facts:bh4x3,th,avg,p5,ph")
        let long = await service.handle(
            method: "GET",
            path: "/info/insecure/blurhash:4:3/thumb_hash:1/average:1/palette:5/perceptual_hash:1/plain/\(source)",
            headers: [:])
        XCTAssertEqual(long.body, response.body)
        // thumbor's /meta/ takes the same facts as filters, and answers them with the same names.
        let meta = await service.handle(
            method: "GET",
            path:
                "/unsafe/meta/filters:blurhash(4,3):thumb_hash():average():palette(5):perceptual_hash()/127.0.0.1:\(origin.port)/photo.jpg",
            headers: [:])
        let metaObject = try XCTUnwrap(try JSONSerialization.jsonObject(with: meta.body) as? [String: Any])
        // imgproxy's calc_hashsums: digests of the source's bytes (no pixels needed).
        let sums = await service.handle(
            method: "GET", path: "/info/insecure/chs:md5:sha256/plain/\(source)", headers: [:])
        let hashsums = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: sums.body) as? [String: Any])?["hashsums"] as? [String: String])
        XCTAssertEqual(hashsums["sha256"], SHA256.hash(data: jpeg).map { String(format: "%02x", $0) }.joined())
        XCTAssertEqual(hashsums["md5"]?.count, 32)
        XCTAssertEqual(hashsums.count, 2)
        for key in ["blurhash", "thumb_hash", "average", "palette", "perceptual_hash"] {
            XCTAssertEqual(
                try JSONSerialization.data(withJSONObject: [metaObject[key] as Any], options: .sortedKeys),
                try JSONSerialization.data(withJSONObject: [object[key] as Any], options: .sortedKeys), key)
        }
        let dominant = await service.handle(method: "GET", path: "/info/insecure/dc:1:1/plain/\(source)", headers: [:])
        let colours = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: dominant.body) as? [String: Any])?["dominant_colors"]
                as? [String: [String: Int]])
        let expected = small.dominantColors(buildingMissed: true).named
        XCTAssertEqual(Set(colours.keys), Set(expected.keys))
        for (name, colour) in expected {
            XCTAssertEqual(colours[name], ["R": Int(colour.red), "G": Int(colour.green), "B": Int(colour.blue)], name)
        }
        for bad in ["bh:10:3", "p:1", "p:300", "th:maybe", "avg:1:2:3", "dc:x"] {
            let answer = await service.handle(
                method: "GET", path: "/info/insecure/\(bad)/plain/\(source)", headers: [:])
            XCTAssertEqual(answer.status.code, 400, bad)
        }
    }

    func testAVideosInfoHasItsPosterPlaceholder() async throws {
        try XCTSkipUnless(VideoFrameSource.isSupported, "the Video trait is off")
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        origin.route("/clip.mp4", .init(body: [UInt8](VideoServiceTests.mp4)))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("info-facts-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let response = await service.handle(
            method: "GET", path: "/info/insecure/bh:3:3/plain/http://127.0.0.1:\(origin.port)/clip.mp4", headers: [:])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        let poster = try VideoFrameSource(data: VideoServiceTests.mp4).frame(
            at: 1, fitting: PixelSize(width: 100, height: 100)
        ).bitmap
        XCTAssertEqual(object["blurhash"] as? String, try poster.blurHash(componentsX: 3, componentsY: 3))
        XCTAssertNotNil(object["video"])
    }
}
