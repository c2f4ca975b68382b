import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// Smart crop (thumbor `smart/`, imgproxy `g:sm`): the window goes where the detail is.
final class SmartCropTests: XCTestCase {
    /// A flat grey 400×100 picture with a checkered, saturated patch at x 300…379.
    static func picture() throws -> DecodedImage {
        let buffer = try PixelBuffer(width: 400, height: 100)
        for y in 0..<100 {
            let row = buffer.row(y)
            for x in 0..<400 {
                let patch = x >= 300 && x < 380 && y >= 10 && y < 90
                let on = ((x / 4) + (y / 4)) % 2 == 0
                row[x * 4] = patch ? (on ? 230 : 30) : 128
                row[x * 4 + 1] = patch ? (on ? 40 : 200) : 128
                row[x * 4 + 2] = patch ? 60 : 128
                row[x * 4 + 3] = 255
            }
        }
        return DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png)
    }

    func testTheWindowCoversTheDetail() throws {
        let bitmap = try Self.picture().frames[0].bitmap
        let window = SmartCrop.window(
            of: (width: 100, height: 100), within: PixelRect(x: 0, y: 0, width: 400, height: 100), in: bitmap)
        XCTAssertEqual(window.width, 100)
        XCTAssertEqual(window.height, 100)
        XCTAssertGreaterThanOrEqual(window.x, 280, "the patch is at 300…379")
        XCTAssertLessThanOrEqual(window.x, 300)
        // A flat picture: the centre, as a plain crop.
        let flat = try PixelBuffer(width: 400, height: 100)
        for y in 0..<100 { flat.row(y).update(repeating: 200, count: 1600) }
        let centred = SmartCrop.window(
            of: (width: 100, height: 100), within: PixelRect(x: 0, y: 0, width: 400, height: 100),
            in: flat.freeze(isOpaque: true))
        XCTAssertEqual(centred.x, 150)
    }

    func testBothGrammarsCropToTheDetailAndAFocalPointWins() throws {
        let png = try ImageCodersManager.shared.encode(Self.picture(), as: .png, options: .init())
        func crop(_ path: String) throws -> Bitmap {
            let result = try ImageProcessor().process(png, request: try ImageRequest.parse(path: path))
            return try ImageCodersManager.shared.decode(result.data).frames[0].bitmap
        }
        func spread(_ bitmap: Bitmap) -> Int {
            var values = Set<UInt8>()
            for y in stride(from: 0, to: bitmap.height, by: 5) {
                for x in stride(from: 0, to: bitmap.width, by: 5) { values.insert(bitmap[x, y].r) }
            }
            return values.count
        }
        for path in ["/unsafe/50x50/smart/example.com/a.png", "/_/rs:fill:50:50/g:sm/plain/http://example.com/a.png"] {
            XCTAssertGreaterThan(spread(try crop(path)), 2, "\(path): the crop shows the patch")
        }
        XCTAssertEqual(spread(try crop("/unsafe/50x50/example.com/a.png")), 1, "a centred crop is flat grey")
        XCTAssertEqual(
            spread(try crop("/_/rs:fill:50:50/g:fp:0.1:0.5/plain/http://example.com/a.png")), 1, "the focal point wins")
    }
}
