import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// `--client-hints`: imgproxy URLs without a width or DPR take them from the request's hints
/// (imgproxy's rules), results are kept per hint, and responses say `Vary` and `Accept-CH`.
final class ClientHintsTests: XCTestCase {
    var origin: TestHTTPServer!
    var directory: URL!

    override func setUpWithError() throws {
        let buffer = try PixelBuffer(width: 1200, height: 800)
        buffer.fill(with: RGBAColor(red: 40, green: 120, blue: 200))
        let jpeg = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .jpeg), as: .jpeg,
            options: .init(quality: 0.8))
        origin = try TestHTTPServer()
        origin.route("/photo.jpg", .init(body: [UInt8](jpeg)))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("client-hints-\(UUID())")
    }

    override func tearDown() {
        origin?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func width(_ response: ImageServiceResponse) throws -> Int {
        XCTAssertEqual(response.status, 200, String(decoding: response.body.prefix(200), as: UTF8.self))
        return try ImageCodersManager.shared.decode(response.body).width
    }

    func testHintsGiveTheWidthAndDPRWhenTheURLSetsNone() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) { $0.clientHints = true }
        let path = "/insecure/plain/http://127.0.0.1:\(origin.port)/photo.jpg@jpg"
        let plain = await service.handle(method: "GET", path: path, headers: [:])
        XCTAssertEqual(try width(plain), 1200)
        XCTAssertEqual(plain.header("Accept-CH"), ClientHints.acceptCH)
        XCTAssertEqual(plain.header("Vary"), ClientHints.headerNames.joined(separator: ", "))
        // Width in device pixels: 400 at DPR 2 is 200 CSS pixels, doubled again.
        let hinted = await service.handle(
            method: "GET", path: path, headers: ["Sec-CH-DPR": "2", "Sec-CH-Width": "400"])
        XCTAssertEqual(try width(hinted), 400)
        XCTAssertNotEqual(hinted.header("ETag"), plain.header("ETag"))
        for (headers, expected) in [
            (["Width": "300"], 300), (["DPR": "1.5", "Width": "300"], 300), (["Sec-CH-Viewport-Width": "360"], 360),
            (["Sec-CH-DPR": "50", "Width": "-3"], 1200),  // nonsense is ignored
        ] {
            let response = await service.handle(method: "GET", path: path, headers: headers)
            XCTAssertEqual(try width(response), expected, "\(headers)")
        }
        // The URL's width wins; the hint's DPR still multiplies it.
        let asked = "/insecure/w:100/plain/http://127.0.0.1:\(origin.port)/photo.jpg@jpg"
        let doubled = await service.handle(
            method: "GET", path: asked, headers: ["Sec-CH-DPR": "2", "Sec-CH-Width": "900"])
        XCTAssertEqual(try width(doubled), 200)
        // thumbor's grammar has no place for them.
        let thumbor = await service.handle(
            method: "GET", path: "/unsafe/127.0.0.1:\(origin.port)/photo.jpg", headers: ["Sec-CH-Width": "300"])
        XCTAssertEqual(try width(thumbor), 1200)
        XCTAssertNil(thumbor.header("Accept-CH"))
    }

    func testOffByDefault() async throws {
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let response = await service.handle(
            method: "GET", path: "/insecure/plain/http://127.0.0.1:\(origin.port)/photo.jpg@jpg",
            headers: ["Sec-CH-DPR": "2", "Sec-CH-Width": "400"])
        XCTAssertEqual(try width(response), 1200)
        XCTAssertNil(response.header("Accept-CH"))
        XCTAssertNil(response.header("Vary"))
    }
}
