import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// imgproxy's resizing types as its documentation states them (no imgproxy binary is at hand
/// to compare with, unlike thumbor): a 640×480 source unless said otherwise.
final class ImgproxyGeometryTests: XCTestCase {
    func size(_ options: String, _ width: Int = 640, _ height: Int = 480) throws -> String {
        let request = try ImageRequest.parse(
            path: options.isEmpty ? "/_/plain/http://example.com/a.jpg" : "/_/\(options)/plain/http://example.com/a.jpg"
        )
        let plan = GeometryPlan(sourceWidth: width, sourceHeight: height, request: request)
        return "\(plan.outputWidth)x\(plan.outputHeight)"
    }

    func testResizingTypes() throws {
        XCTAssertEqual(try size("rs:fit:300:300"), "300x225")
        XCTAssertEqual(try size("rs:fit:300:0"), "300x225")
        XCTAssertEqual(try size("rs:fit:0:120"), "160x120")
        XCTAssertEqual(try size("rs:fill:300:300"), "300x300")
        XCTAssertEqual(try size("rs:fill:300:100"), "300x100")
        XCTAssertEqual(try size("rs:force:300:100"), "300x100")
        XCTAssertEqual(try size("rs:fit:1000:1000"), "640x480", "no enlarging by default")
        XCTAssertEqual(try size("rs:fit:1000:1000:1"), "1000x750")
        XCTAssertEqual(
            try size("rs:fill:1000:1000"), "640x480",
            "fill without enlarge does not keep the box shape (fill-down does)")
        XCTAssertEqual(try size("rs:fill-down:1000:500"), "640x320")
        XCTAssertEqual(try size("rs:fit:1000:1000:0:1"), "1000x1000", "extend pads to the box")
        XCTAssertEqual(try size("rs:auto:300:200"), "300x200", "both landscape: fill")
        XCTAssertEqual(try size("rs:auto:200:300"), "200x150", "orientations differ: fit")
        XCTAssertEqual(try size("rs:fit:300:300/dpr:2"), "600x450")
        XCTAssertEqual(try size("w:200/z:0.5"), "100x75")
        XCTAssertEqual(try size("rs:fit:100:100/mw:200"), "100x100", "scaled to 200x150, cut to the box")
        XCTAssertEqual(try size("c:0.5:0.5/rs:fit:100:100"), "100x75")
        XCTAssertEqual(try size("c:320:100"), "320x100")
        XCTAssertEqual(try size("rs:fit:300:300/pd:10:20"), "340x245")
        XCTAssertEqual(try size("rs:fit:300:300/rot:90"), "225x300")
        XCTAssertEqual(try size(""), "640x480")
    }

    /// Case by case as imgproxy's `calcScale`, `calcSizes` and `cropToResult` take them, on a
    /// 1600×1000 source: zoom and dpr with and without a size, with and without enlarge, and
    /// min-width / min-height, which scale past the box and are then cut back to it.
    func testScaleAndCropToResultAsImgproxyComputesThem() throws {
        let cases: [(String, String, String)] = [
            ("rs:fit:400:100/mw:320", "320x100", "fit gives 160x100; min-width scales to 320x200; cut to 100 high"),
            ("rs:fit:400:100/mh:200", "320x100", "min-height 200 scales to 320x200; cut to the box"),
            ("rs:fill:400:100/mh:200", "400x100", "fill already reaches 250 high: min-height changes nothing"),
            ("rs:force:400:100/mw:800", "400x100", "force scales each side; min-width 800x200, cut to the box"),
            ("z:0.5", "800x500", "zoom without a size multiplies the source's"),
            ("z:2", "1600x1000", "no enlarging without el:1"),
            ("z:2/el:1", "3200x2000", ""),
            ("z:0.5:0.25", "800x250", "zoom per side"),
            ("rs:fit:400:400/z:0.5", "200x125", "the box is 400x400 × 0.5"),
            ("rs:fill:400:400/z:0.5", "200x200", "fill to 320x200, cut to 200x200"),
            ("rs:fit:400:0/dpr:2", "800x500", ""),
            ("rs:fit:1000:1000/dpr:2", "1600x1000", "dpr lowered to 1.6: the source is the limit"),
            ("rs:fit:1000:1000/dpr:2/el:1", "2000x1250", ""),
            ("rs:fit:400:400/dpr:0.5", "200x125", ""),
            ("rs:fit:2000:2000:0:1/dpr:2", "2000x2000", "extend keeps the box at dpr 1 (the source is smaller)"),
            ("rs:fit:400:400/pd:10/dpr:2", "840x540", "padding scales by the effective dpr"),
        ]
        for (options, expected, why) in cases {
            XCTAssertEqual(try size(options, 1600, 1000), expected, "\(options): \(why)")
        }
    }

    /// A fill whose box has another shape than the source cuts a region of the source, placed by
    /// the gravity, and scales it to exactly the box (it once cut the box's size out of the
    /// unscaled source and stretched it: a 120×80 fill of a portrait came out 120×180).
    func testFillCutsTheSourceRegionTheGravityNames() throws {
        // 60×90, three horizontal bands: red, green, blue; and the same turned (vertical bands).
        func bands(width: Int, height: Int, vertical: Bool) throws -> Data {
            let buffer = try PixelBuffer(width: width, height: height)
            for y in 0..<height {
                let row = buffer.row(y)
                for x in 0..<width {
                    let band = vertical ? x * 3 / width : y * 3 / height
                    row[x * 4] = band == 0 ? 255 : 0
                    row[x * 4 + 1] = band == 1 ? 255 : 0
                    row[x * 4 + 2] = band == 2 ? 255 : 0
                    row[x * 4 + 3] = 255
                }
            }
            let image = DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png)
            return try ImageCodersManager.shared.encode(image, as: .png, options: .init())
        }
        let portrait = try bands(width: 60, height: 90, vertical: false)
        let landscape = try bands(width: 90, height: 60, vertical: true)
        func answer(_ source: Data, _ options: String) throws -> Bitmap {
            let request = try ImageRequest.parse(path: "/_/\(options)/plain/http://example.com/a.png")
            let result = try ImageProcessor().process(source, request: request)
            return try ImageCodersManager.shared.decode(result.data).frames[0].bitmap
        }
        for (source, options, colour) in [
            (portrait, "rs:fill:30:20", "g"), (portrait, "rs:fill:30:20/g:no", "r"),
            (portrait, "rs:fill:30:20/g:so", "b"), (landscape, "rs:fill:20:30", "g"),
            (landscape, "rs:fill:20:30/g:we", "r"), (portrait, "rs:auto:30:60", "g"),
        ] {
            let bitmap = try answer(source, options)
            let expected = options.hasPrefix("rs:auto") ? (30, 60) : options.contains(":30:20") ? (30, 20) : (20, 30)
            XCTAssertEqual(bitmap.width, expected.0, options)
            XCTAssertEqual(bitmap.height, expected.1, options)
            guard !options.hasPrefix("rs:auto") else { continue }
            let centre = bitmap[bitmap.width / 2, bitmap.height / 2]
            let dominant = centre.r > 200 ? "r" : centre.g > 200 ? "g" : centre.b > 200 ? "b" : "?"
            XCTAssertEqual(dominant, colour, options)
        }
        // The centred 60×40 region of the portrait spans rows 25…64: red at its top edge, blue
        // at its bottom (a 30×20 cut of the unscaled source would be green throughout).
        let centred = try answer(portrait, "rs:fill:30:20")
        XCTAssertEqual(centred[15, 0].r, 255)
        XCTAssertGreaterThan(centred[15, 19].b, 200)
        // The plan says the same: a 1200×800 region of a 1200×1800 source, scaled to 120×80.
        let request = try ImageRequest.parse(path: "/_/rs:fill:120:80/plain/http://example.com/a.jpg")
        let plan = GeometryPlan(sourceWidth: 1200, sourceHeight: 1800, request: request)
        XCTAssertEqual(plan.fillCrop, GeometryPlan.Rect(x: 0, y: 500, width: 1200, height: 800))
        XCTAssertEqual(plan.scaledWidth, 120)
        XCTAssertEqual(plan.scaledHeight, 80)
    }
}
