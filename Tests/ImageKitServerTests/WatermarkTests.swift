import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// thumbor's watermark(): positions, ratios, transparency and tiling, on real pixels.
final class WatermarkTests: XCTestCase {
    static func png(width: Int, height: Int, _ color: (UInt8, UInt8, UInt8, UInt8)) throws -> Data {
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                row[x * 4] = color.0; row[x * 4 + 1] = color.1; row[x * 4 + 2] = color.2; row[x * 4 + 3] = color.3
            }
        }
        return try ImageCodersManager.shared.encode(
            DecodedImage(
                frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: color.3 == 255))],
                format: .png), as: .png, options: .init())
    }

    func render(_ filter: String, mark: Data? = nil) throws -> Bitmap {
        let source = try Self.png(width: 200, height: 100, (0, 0, 255, 255))
        let request = try ImageRequest.parse(path: "/unsafe/filters:\(filter):format(png)/example.com/a.png")
        let result = try ImageProcessor().process(
            source, request: request,
            watermarks: ["wm.example/m.png": try mark ?? Self.png(width: 20, height: 10, (255, 0, 0, 255))])
        return try ImageCodersManager.shared.decode(result.data).frames[0].bitmap
    }

    func isRed(_ pixel: (r: UInt8, g: UInt8, b: UInt8, a: UInt8)) -> Bool { pixel.r > 200 && pixel.b < 50 }

    func testPositions() throws {
        let corner = try render("watermark(wm.example/m.png,10,5,0)")
        XCTAssertTrue(isRed(corner[10, 5]) && isRed(corner[29, 14]))
        XCTAssertFalse(isRed(corner[9, 5]) || isRed(corner[30, 14]) || isRed(corner[10, 15]))
        let fromRight = try render("watermark(wm.example/m.png,-10,-5,0)")
        XCTAssertTrue(isRed(fromRight[170, 85]) && isRed(fromRight[189, 94]))
        XCTAssertFalse(isRed(fromRight[190, 94]))
        let centred = try render("watermark(wm.example/m.png,center,center,0)")
        XCTAssertTrue(isRed(centred[90, 45]) && isRed(centred[109, 54]))
        XCTAssertFalse(isRed(centred[89, 45]))
        let percent = try render("watermark(wm.example/m.png,50p,50p,0)")
        XCTAssertTrue(isRed(percent[100, 50]))
        XCTAssertFalse(isRed(percent[99, 50]))
    }

    func testTransparencyRatioAndTiles() throws {
        let half = try render("watermark(wm.example/m.png,0,0,50)")[5, 5]
        XCTAssertEqual(Int(half.r), 128, accuracy: 2)
        XCTAssertEqual(Int(half.b), 128, accuracy: 2)
        let invisible = try render("watermark(wm.example/m.png,0,0,100)")[5, 5]
        XCTAssertEqual(invisible.b, 255)
        // 50 % of the width: the 20×10 mark becomes 100×50.
        let large = try render("watermark(wm.example/m.png,0,0,0,50,none)")
        XCTAssertTrue(isRed(large[99, 49]))
        XCTAssertFalse(isRed(large[100, 49]) || isRed(large[99, 50]))
        // Tiled: 10 copies across 200 px, 10 down 100 px, no gaps.
        let tiled = try render("watermark(wm.example/m.png,repeat,repeat,0)")
        XCTAssertTrue(isRed(tiled[0, 0]) && isRed(tiled[199, 99]) && isRed(tiled[105, 55]))
        // An unknown position is a 400 when the URL is read, before the source is fetched.
        for filter in ["watermark(wm.example/m.png,left,0,0)", "watermark(wm.example/m.png,0,10q,0)"] {
            XCTAssertThrowsError(try ImageRequest.parse(path: "/unsafe/filters:\(filter)/example.com/a.png")) { error in
                XCTAssertEqual((error as? ImageServiceError)?.status, 400, filter)
                XCTAssertEqual((error as? ImageServiceError)?.code, .invalidFilterArgument, filter)
            }
        }
    }

    func testPositionsAreReadOnceAndWrittenBackInThumborsSpelling() throws {
        let cases: [(String, ImageOperations.WatermarkPosition, String)] = [
            ("10", .pixels(10), "10"), ("-10", .pixels(-10), "-10"), ("20p", .percent(20), "20p"),
            ("-20p", .percent(-20), "-20p"), ("center", .center, "center"), ("repeat", .repeated, "repeat"),
            ("-0", .pixels(0), "0"),
        ]
        for (text, position, spelling) in cases {
            XCTAssertEqual(try ImageOperations.WatermarkPosition(text), position, text)
            XCTAssertEqual(position.description, spelling, text)
        }
        for text in ["", "-", "p", "10.5", "--5p", "left", "20%", "99999999"] {
            XCTAssertThrowsError(try ImageOperations.WatermarkPosition(text), text)
        }
        // Along a 250-px side, thumbor rounds a percentage's half up, and a negative one counts from the end.
        XCTAssertEqual(Watermark.position(.percent(1), length: 250), .pixels(3))
        XCTAssertEqual(Watermark.position(.percent(-1), length: 250), .pixels(-3))
        // The URL renders back to the same filter, so the key is the same however it was spelled.
        let request = try ImageRequest.parse(
            path: "/unsafe/filters:watermark(wm.example/m.png,-20p,center,30)/a.example/a.png")
        XCTAssertTrue(request.operations.canonicalKey.contains("watermark(wm.example/m.png,-20p,center,30"))
    }
}
