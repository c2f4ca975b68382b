import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// Autoquality through the service: imgproxy's `aq` and thumbor's `autoquality()`, the operator's
/// default, the `X-ImageKit-Quality` header, the key and ETag, `best` comparing like with like.
final class AutoQualityServiceTests: XCTestCase {
    var origin: TestHTTPServer!
    var directory: URL!
    var reference: Bitmap!

    override func setUpWithError() throws {
        let photo = try PerceptualMetricTestsPhoto.photo()
        reference = photo
        origin = try TestHTTPServer()
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: photo)], format: .png), as: .png, options: .init())
        origin.route("/photo.png", .init(body: [UInt8](png)))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("aq-\(UUID())")
    }

    override func tearDown() {
        origin?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    var source: String { "http://127.0.0.1:\(origin.port)/photo.png" }

    func score(_ body: Data) throws -> Double {
        try reference.ssimulacra2(of: try ImageCodersManager.shared.decode(body).frames[0].bitmap)
    }

    func testImgproxysOptionMeetsItsTargetAndSaysTheQuality() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let fixed = await service.handle(method: "GET", path: "/insecure/q:80/plain/\(source)@jpg", headers: [:])
        XCTAssertNil(fixed.header("X-ImageKit-Quality"))
        for target in [65.0, 80] {
            let answer = await service.handle(
                method: "GET", path: "/insecure/aq:ssimulacra2:\(Int(target))/plain/\(source)@jpg", headers: [:])
            XCTAssertEqual(answer.status, 200)
            let header = try XCTUnwrap(answer.header("X-ImageKit-Quality"))
            let parts = header.split(separator: ";")
            let quality = try XCTUnwrap(Int(parts[0]))
            XCTAssertTrue(header.contains("ssimulacra2="), header)
            XCTAssertGreaterThanOrEqual(try score(answer.body), target)
            XCTAssertNotEqual(answer.header("ETag"), fixed.header("ETag"))
            print("aq:ssimulacra2:\(target) → \(header), \(answer.body.count) B (q80: \(fixed.body.count) B)")
            XCTAssertTrue((10...95).contains(quality))
        }
        // The long name, the size method, and thumbor's filter.
        let sized = await service.handle(
            method: "GET", path: "/insecure/autoquality:size:9000:10:90/plain/\(source)@webp", headers: [:])
        XCTAssertEqual(sized.status, 200)
        XCTAssertLessThanOrEqual(sized.body.count, 9000)
        XCTAssertNotNil(sized.header("X-ImageKit-Quality"))
        let thumbor = await service.handle(
            method: "GET",
            path: "/unsafe/filters:autoquality(ssimulacra2,75):format(jpeg)/127.0.0.1:\(origin.port)/photo.png",
            headers: [:])
        XCTAssertEqual(thumbor.status, 200)
        XCTAssertGreaterThanOrEqual(try score(thumbor.body), 75)
        XCTAssertNotNil(thumbor.header("X-ImageKit-Quality"))
    }

    /// A result read back from the disk tier (a restarted node) still says the quality chosen
    /// and keeps its ETag: the choice is kept with the entry.
    func testTheChoiceSurvivesTheDiskTier() async throws {
        let path = "/insecure/aq:ssimulacra2:70/plain/\(source)@jpg"
        let first = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let made = await first.handle(method: "GET", path: path, headers: [:])
        let header = try XCTUnwrap(made.header("X-ImageKit-Quality"))
        first.flush()
        let restarted = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let stored = await restarted.handle(method: "GET", path: path, headers: [:])
        XCTAssertEqual(stored.status, 200)
        XCTAssertEqual(stored.cacheTier, .resultDisk)
        XCTAssertEqual(stored.header("X-ImageKit-Quality"), header)
        XCTAssertEqual(stored.header("ETag"), made.header("ETag"))
        XCTAssertEqual(stored.body, made.body)
        let fixed = await restarted.handle(method: "GET", path: "/insecure/q:80/plain/\(source)@jpg", headers: [:])
        XCTAssertNil(fixed.header("X-ImageKit-Quality"))
    }

    func testBadArgumentsAnswer400() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        for option in ["aq:bogus", "aq:ssimulacra2:70:90:80", "aq:dssim:x", "aq:size:100:0", "aq:a:b:c:d:e:f"] {
            let answer = await service.handle(
                method: "GET", path: "/insecure/\(option)/plain/\(source)@jpg", headers: [:])
            XCTAssertEqual(answer.status, 400, option)
            XCTAssertEqual(answer.header("Content-Type"), "application/json", option)
        }
    }

    func testParsedRenderedAndKeyed() throws {
        for path in [
            "/insecure/aq:dssim:0.02:70:80:0.001/plain/http://example.com/a.jpg",
            "/insecure/aq:ssimulacra2:72/plain/http://example.com/a.jpg",
            "/insecure/aq:none/plain/http://example.com/a.jpg",
        ] {
            let request = try ImageRequest.parse(path: path)
            XCTAssertNotNil(request.operations.autoQuality, path)
            let again = try ImageRequest.parse(
                path: "/_" + ImgproxyURL.path(for: request.operations, source: request.source))
            XCTAssertEqual(again.operations.autoQuality, request.operations.autoQuality, path)
        }
        let a = try ImageRequest.parse(path: "/insecure/aq:ssimulacra2:70/plain/http://example.com/a.jpg")
        let b = try ImageRequest.parse(path: "/insecure/aq:ssimulacra2:80/plain/http://example.com/a.jpg")
        let c = try ImageRequest.parse(path: "/insecure/plain/http://example.com/a.jpg")
        XCTAssertNotEqual(a.operations.canonicalKey, b.operations.canonicalKey)
        XCTAssertNotEqual(a.operations.canonicalKey, c.operations.canonicalKey)
        let thumbor = try ImageRequest.parse(path: "/unsafe/filters:autoquality(dssim,0.01,60,90)/example.com/a.jpg")
        XCTAssertEqual(
            thumbor.operations.autoQuality,
            ImageOperations.AutoQualityRequest(method: .dssim, target: 0.01, minQuality: 60, maxQuality: 90))
        XCTAssertTrue(
            ThumborURL.path(for: thumbor.operations, source: thumbor.source).contains("autoquality(dssim,0.01,60,90)"))
    }

    /// `--autoquality`: URLs without a quality of their own get the search; `q:` keeps its fixed
    /// quality; `aq:none` turns it off.
    func testTheOperatorsDefault() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) {
            $0.autoQuality = try! AutoQualityDefaults("ssimulacra2:75")
        }
        let searched = await service.handle(method: "GET", path: "/insecure/plain/\(source)@jpg", headers: [:])
        XCTAssertNotNil(searched.header("X-ImageKit-Quality"))
        XCTAssertGreaterThanOrEqual(try score(searched.body), 75)
        for path in ["/insecure/q:70/plain/\(source)@jpg", "/insecure/aq:none/plain/\(source)@jpg"] {
            let fixed = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(fixed.status, 200)
            XCTAssertNil(fixed.header("X-ImageKit-Quality"), path)
        }
        // Above the resolution limit the fixed quality stands.
        let limited = try ImageService.forTests(cacheDirectory: directory.appendingPathComponent("l")) {
            $0.autoQuality = try! AutoQualityDefaults("ssimulacra2")
            $0.autoQuality.maxResolution = 1000
        }
        let large = await limited.handle(method: "GET", path: "/insecure/plain/\(source)@jpg", headers: [:])
        XCTAssertNil(large.header("X-ImageKit-Quality"))
        XCTAssertThrowsError(try AutoQualityDefaults("fast:70"))
        XCTAssertEqual(try AutoQualityDefaults.formatQualities("jpg=70,avif=40"), [.jpeg: 70, .avif: 40])
    }

    /// With autoquality every candidate meets the same target, and `best` keeps the smallest.
    func testBestComparesLikeWithLike() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let accept = ["Accept": "image/avif,image/webp,image/*"]
        let best = await service.handle(
            method: "GET", path: "/insecure/aq:ssimulacra2:70/plain/\(source)@best", headers: accept)
        XCTAssertEqual(best.status, 200)
        XCTAssertGreaterThanOrEqual(try score(best.body), 70)
        for format in ["jpg", "webp"] + (ImageFormat.avif.isCodecSupported ? ["avif"] : []) {
            let single = await service.handle(
                method: "GET", path: "/insecure/aq:ssimulacra2:70/plain/\(source)@\(format)", headers: [:])
            XCTAssertLessThanOrEqual(best.body.count, single.body.count, format)
        }
    }
}

/// The photo the metric tests use, for this test target (which cannot see ImageKitTests).
enum PerceptualMetricTestsPhoto {
    static func photo(width: Int = 320) throws -> Bitmap {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Corpus/conformance/jpeg/pillow/flower.jpg")
        let image = try ImageCodersManager.shared.decode(try Data(contentsOf: file), options: .init())
        let bitmap = image.frames[0].bitmap
        return try bitmap.resized(to: PixelSize(width: width, height: width * bitmap.height / bitmap.width))
    }
}
