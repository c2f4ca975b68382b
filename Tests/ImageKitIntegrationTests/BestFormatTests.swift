import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// The `best` format: never larger than any single format the client accepts, lossless for a
/// graphic of few colours, only what `Accept` lists, animations kept animated, in both grammars.
final class BestFormatTests: XCTestCase {
    var origin: TestHTTPServer!
    var directory: URL!

    /// A photo-like picture (smooth gradients and noise) and a flat graphic (four colours).
    static func pictures() throws -> (photo: Data, graphic: Data) {
        let photo = try PixelBuffer(width: 320, height: 240)
        let graphic = try PixelBuffer(width: 320, height: 240)
        var seed: UInt32 = 7
        for y in 0..<240 {
            for x in 0..<320 {
                seed = seed &* 1_103_515_245 &+ 12345
                let noise = Int(seed >> 28)
                let p = photo.row(y) + x * 4, g = graphic.row(y) + x * 4
                p[0] = UInt8(min(255, x * 200 / 320 + noise)); p[1] = UInt8(min(255, y + noise)); p[2] = 120; p[3] = 255
                let block = (x / 80 + y / 60) % 4
                g[0] = [250, 20, 30, 240][block]; g[1] = [250, 120, 30, 200][block]; g[2] = [250, 200, 160, 0][block]
                g[3] = 255
            }
        }
        func png(_ buffer: consuming PixelBuffer) throws -> Data {
            try ImageCodersManager.shared.encode(
                DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png), as: .png,
                options: .init())
        }
        return (try png(photo), try png(graphic))
    }

    override func setUpWithError() throws {
        let (photo, graphic) = try Self.pictures()
        origin = try TestHTTPServer()
        origin.route("/photo.png", .init(body: [UInt8](photo)))
        origin.route("/graphic.png", .init(body: [UInt8](graphic)))
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("thumbor/integration-images")
        origin.route(
            "/animated.gif", .init(body: [UInt8](try Data(contentsOf: folder.appendingPathComponent("animated.gif")))))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("best-\(UUID())")
    }

    override func tearDown() {
        origin?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// The encodings `best` tries come from the capability table: lossy JPEG and AVIF, WebP lossy
    /// and (few colours) lossless, PNG only where lossless wins, GIF only for an animation.
    func testTheEncodingsBestTriesComeFromTheTable() {
        func tries(_ format: ImageOperations.Format, fewColours: Bool, opaque: Bool, animated: Bool) -> [Bool] {
            format.capabilities.bestTries.encodings(fewColours: fewColours, opaque: opaque, animated: animated)
        }
        XCTAssertEqual(tries(.jpeg, fewColours: true, opaque: true, animated: false), [false])
        XCTAssertEqual(tries(.avif, fewColours: false, opaque: false, animated: false), [false])
        XCTAssertEqual(tries(.webp, fewColours: false, opaque: true, animated: false), [false])
        XCTAssertEqual(tries(.webp, fewColours: true, opaque: true, animated: false), [false, true])
        XCTAssertEqual(tries(.png, fewColours: false, opaque: true, animated: false), [])
        XCTAssertEqual(tries(.png, fewColours: true, opaque: true, animated: false), [true])
        XCTAssertEqual(tries(.png, fewColours: false, opaque: false, animated: false), [true])
        XCTAssertEqual(tries(.gif, fewColours: true, opaque: true, animated: false), [])
        XCTAssertEqual(tries(.gif, fewColours: false, opaque: true, animated: true), [false])
    }

    func testBestIsNeverLargerThanAnySingleFormat() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let accept = ["Accept": "image/avif,image/webp,image/*"]
        for name in ["photo.png", "graphic.png"] {
            let source = "http://127.0.0.1:\(origin.port)/\(name)"
            let best = await service.handle(method: "GET", path: "/insecure/q:80/plain/\(source)@best", headers: accept)
            XCTAssertEqual(best.status, 200, name)
            XCTAssertEqual(best.header("Vary"), "Accept", name)
            var sizes: [String: Int] = [:]
            for format in ["jpg", "png", "webp"] + (ImageFormat.avif.isCodecSupported ? ["avif"] : []) {
                let single = await service.handle(
                    method: "GET", path: "/insecure/q:80/plain/\(source)@\(format)", headers: [:])
                sizes[format] = single.body.count
                XCTAssertLessThanOrEqual(best.body.count, single.body.count, "\(name): best against \(format)")
            }
            print("best: \(name) \(best.header("Content-Type") ?? "") \(best.body.count) B; singles \(sizes)")
            if name == "graphic.png" {
                XCTAssertTrue(
                    ["image/png", "image/webp"].contains(best.header("Content-Type") ?? ""),
                    "four colours: lossless wins, not \(best.header("Content-Type") ?? "")")
            }
        }
    }

    func testOnlyWhatAcceptListsAndThumborsSpelling() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let host = "127.0.0.1:\(origin.port)"
        let plain = await service.handle(
            method: "GET", path: "/insecure/plain/http://\(host)/photo.png@best", headers: [:])
        XCTAssertTrue(["image/jpeg", "image/png"].contains(plain.header("Content-Type") ?? ""))
        let webpOnly = await service.handle(
            method: "GET", path: "/unsafe/filters:format(best)/\(host)/photo.png", headers: ["Accept": "image/webp"])
        XCTAssertTrue(["image/jpeg", "image/png", "image/webp"].contains(webpOnly.header("Content-Type") ?? ""))
        XCTAssertNotEqual(webpOnly.header("Content-Type"), "image/avif")
        // An animation stays animated: GIF, WebP or AVIF, every frame kept.
        let animated = await service.handle(
            method: "GET", path: "/insecure/plain/http://\(host)/animated.gif@best", headers: ["Accept": "image/webp"])
        XCTAssertEqual(animated.status, 200)
        XCTAssertGreaterThan(try ImageCodersManager.shared.decode(animated.body).frameCount, 1)
        // --best-format makes it the default for URLs without a format.
        let byDefault = try ImageService.forTests(cacheDirectory: directory.appendingPathComponent("d")) {
            $0.bestFormatByDefault = true
        }
        let graphic = await byDefault.handle(
            method: "GET", path: "/insecure/plain/http://\(host)/graphic.png", headers: ["Accept": "image/webp"])
        XCTAssertTrue(["image/png", "image/webp"].contains(graphic.header("Content-Type") ?? ""))
    }
}
