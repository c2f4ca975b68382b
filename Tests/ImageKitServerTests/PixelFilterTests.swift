import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// sharpen (thumbor and imgproxy), pixelate (imgproxy) and noise (thumbor) on real pixels.
final class PixelFilterTests: XCTestCase {
    /// 64×64: a dark left half and a light right half.
    func edge() throws -> Data {
        let buffer = try PixelBuffer(width: 64, height: 64)
        for y in 0..<64 {
            let row = buffer.row(y)
            for x in 0..<64 {
                row[x * 4] = x < 32 ? 60 : 190; row[x * 4 + 1] = row[x * 4]; row[x * 4 + 2] = row[x * 4];
                row[x * 4 + 3] = 255
            }
        }
        return try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png),
            as: .png, options: .init())
    }

    func run(_ path: String) throws -> Bitmap {
        let result = try ImageProcessor().process(try edge(), request: try ImageRequest.parse(path: path))
        return try ImageCodersManager.shared.decode(result.data).frames[0].bitmap
    }

    func testSharpenOvershootsAtTheEdgeAndLeavesFlatAreas() throws {
        for path in [
            "/unsafe/filters:sharpen(2,1.5,false):format(png)/example.com/a.png",
            "/_/sh:2/f:png/plain/http://example.com/a.png",
            "/unsafe/filters:sharpen(2,1.5,true):format(png)/example.com/a.png",
        ] {
            let bitmap = try run(path)
            XCTAssertLessThan(bitmap[31, 32].r, 60, "\(path): darker than dark beside the edge")
            XCTAssertGreaterThan(bitmap[32, 32].r, 190, "\(path): lighter than light beside the edge")
            XCTAssertEqual(bitmap[5, 32].r, 60, path)
            XCTAssertEqual(bitmap[58, 32].r, 190, path)
        }
    }

    func testPixelateAveragesBlocks() throws {
        let bitmap = try run("/_/pix:16/f:png/plain/http://example.com/a.png")
        XCTAssertEqual(bitmap[0, 0].r, bitmap[15, 15].r)
        XCTAssertEqual(bitmap[16, 0].r, 60)
        XCTAssertEqual(bitmap[48, 0].r, 190)
        let odd = try run("/_/pix:24/f:png/plain/http://example.com/a.png")
        let mean: Int = (8 * 60 + 16 * 190 + 12) / 24
        XCTAssertEqual(Int(odd[24, 0].r), mean, "a block across the edge is its mean")
    }

    func testNoiseIsBoundedAndTheSameForTheSameURL() throws {
        let path = "/unsafe/filters:noise(20):format(png)/example.com/a.png"
        let first = try run(path), second = try run(path)
        var changed = 0
        for y in 0..<64 {
            for x in 0..<64 {
                XCTAssertEqual(first[x, y].r, second[x, y].r)
                let base = x < 32 ? 60 : 190
                XCTAssertLessThanOrEqual(abs(Int(first[x, y].r) - base), 20)
                if Int(first[x, y].r) != base { changed += 1 }
            }
        }
        XCTAssertGreaterThan(changed, 64 * 64 / 2)
    }

    func testFillAutoPaintsTheMedianColour() throws {
        let buffer = try PixelBuffer(width: 40, height: 20)
        for y in 0..<20 {
            let row = buffer.row(y)
            for x in 0..<40 {
                row[x * 4] = x < 10 ? 250 : 20; row[x * 4 + 1] = x < 10 ? 10 : 180; row[x * 4 + 2] = 40;
                row[x * 4 + 3] = 255
            }
        }
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png),
            as: .png, options: .init())
        let result = try ImageProcessor().process(
            png,
            request: try ImageRequest.parse(
                path: "/unsafe/fit-in/40x40/filters:fill(auto):format(png)/example.com/a.png"))
        let bitmap = try ImageCodersManager.shared.decode(result.data).frames[0].bitmap
        XCTAssertEqual("\(bitmap.width)x\(bitmap.height)", "40x40")
        let canvas = bitmap[20, 2]
        XCTAssertEqual([canvas.r, canvas.g, canvas.b], [20, 180, 40], "three quarters of the pixels are that colour")
    }

    /// thumbor's `format(jxl)` / `format(heic)` and imgproxy's `@jxl` / `@heic`: JPEG XL and HEIC
    /// are written when the build has them (415 otherwise).
    func testJPEGXLAndHEICOutputs() throws {
        for (name, format) in [("jxl", ImageFormat.jpegXL), ("heic", .heic)] {
            for path in [
                "/unsafe/fit-in/32x32/filters:format(\(name))/example.com/a.png",
                "/insecure/rs:fit:32:32/plain/https://example.com/a.png@\(name)",
            ] {
                let request = try ImageRequest.parse(path: path)
                if format.isCodecSupported {
                    let result = try ImageProcessor().process(try edge(), request: request)
                    XCTAssertEqual(ImageSignature(result.data).format, format, path)
                    XCTAssertEqual(
                        try ImageCodersManager.shared.decode(result.data).width, 32)
                } else {
                    XCTAssertThrowsError(try ImageProcessor().process(try edge(), request: request)) { error in
                        XCTAssertEqual((error as? ImageServiceError)?.status, 415, path)
                    }
                }
            }
        }
    }

    /// equalize(): the edge's two levels (60 and 190) spread over the range: the darker is
    /// 0 (the lowest value present), the lighter 255 (the cumulative histogram's top).
    func testEqualizeSpreadsEachChannelOverTheWholeRange() throws {
        let bitmap = try run("/unsafe/filters:equalize():format(png)/example.com/a.png")
        XCTAssertEqual(bitmap[5, 32].r, 0)
        XCTAssertEqual(bitmap[58, 32].r, 255)
        XCTAssertEqual(bitmap[58, 32].g, 255)
    }

    /// curve(): the identity line leaves the pixels; a curve through (0,0), (128,200), (255,255)
    /// lifts the middle; the per-channel curve comes first, then the common one.
    func testCurveMapsEachChannelThroughItsSpline() throws {
        let identity = "[(0,0),(255,255)]"
        let same = try run(
            "/unsafe/filters:curve(\(identity),\(identity),\(identity),\(identity)):format(png)/example.com/a.png")
        XCTAssertEqual(same[5, 32].r, 60)
        XCTAssertEqual(same[58, 32].b, 190)
        let table = ApplyFilters.splineTable([0, 0, 128, 200, 255, 255])
        XCTAssertEqual(table[0], 0)
        XCTAssertEqual(table[128], 200)
        XCTAssertEqual(table[255], 255)
        XCTAssertGreaterThan(table[60], 60 * 200 / 128, "a spline bulges above the straight line below the knee")
        XCTAssertEqual(ApplyFilters.splineTable([30, 10, 200, 240])[0], 10, "flat before the first point")
        XCTAssertEqual(ApplyFilters.splineTable([30, 10, 200, 240])[250], 240, "flat after the last point")
        let lifted = try run(
            "/unsafe/filters:curve([(0,0),(128,200),(255,255)],\(identity),[(0,0),(255,0)],\(identity)):format(png)/example.com/a.png"
        )
        XCTAssertEqual(Int(lifted[5, 32].r), table[60])
        XCTAssertEqual(lifted[5, 32].g, 0, "green flattened to 0 first, and the common curve keeps 0")
    }

    /// frame(): a 7 × 7 nine-patch (one-pixel marker border: the middle row and column stretch,
    /// the content area leaves one pixel on each side) around a 20 × 10 blue image: 22 × 12, the
    /// patch's red ring drawn over the edges at every size, the image inside.
    func testFrameSetsTheImageInsideANinePatch() throws {
        let patch = try PixelBuffer(width: 7, height: 7)
        for y in 0..<7 {
            let row = patch.row(y)
            for x in 0..<7 {
                var pixel: [UInt8] = [0, 0, 0, 0]
                let border = x == 0 || y == 0 || x == 6 || y == 6
                if border {
                    let marked =
                        (y == 0 && x == 3) || (x == 0 && y == 3) || (y == 6 && (2...4).contains(x))
                        || (x == 6 && (2...4).contains(y))
                    if marked { pixel = [0, 0, 0, 255] }
                } else if x == 1 || y == 1 || x == 5 || y == 5 {
                    pixel = [255, 0, 0, 255]
                }
                for channel in 0..<4 { row[x * 4 + channel] = pixel[channel] }
            }
        }
        let patchData = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: patch.freeze(isOpaque: false))], format: .png), as: .png,
            options: .init())
        let blue = try PixelBuffer(width: 20, height: 10)
        for y in 0..<10 {
            let row = blue.row(y)
            for x in 0..<20 { row[x * 4] = 0; row[x * 4 + 1] = 0; row[x * 4 + 2] = 255; row[x * 4 + 3] = 255 }
        }
        let source = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: blue.freeze(isOpaque: true))], format: .png), as: .png,
            options: .init())
        let request = try ImageRequest.parse(
            path: "/unsafe/filters:frame(example.com/f.png):format(png)/example.com/a.png")
        let result = try ImageProcessor().process(
            source, request: request, watermarks: ["example.com/f.png": patchData])
        let framed = try ImageCodersManager.shared.decode(result.data).frames[0].bitmap
        XCTAssertEqual("\(framed.width)x\(framed.height)", "22x12", "padded by the content area's margins")
        for (x, y) in [(0, 0), (21, 0), (0, 11), (21, 11), (11, 0), (0, 6), (21, 6), (11, 11)] {
            XCTAssertTrue(framed[x, y] == (255, 0, 0, 255), "ring at \(x),\(y): \(framed[x, y])")
        }
        for (x, y) in [(11, 6), (1, 1), (20, 10), (5, 3)] {
            XCTAssertTrue(framed[x, y] == (0, 0, 255, 255), "image at \(x),\(y): \(framed[x, y])")
        }
    }

    /// A picture whose markers leave wide margins cannot make the canvas a memory bomb: the result
    /// is checked against the pixel limit before it is allocated (422 `tooManyPixels`).
    func testFrameMarginsAreBoundedByThePixelLimit() throws {
        let side = 900
        let patch = try PixelBuffer(width: side, height: side)
        for y in 0..<side { patch.row(y).update(repeating: 0, count: 4 * side) }
        // Content area marked only at the far end of the bottom row and the right column: margins
        // of side - 3 on the left and at the top.
        let bottom = patch.row(side - 1) + 4 * (side - 2)
        bottom[3] = 255
        let right = patch.row(side - 2) + 4 * (side - 1)
        right[3] = 255
        let patchData = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: patch.freeze(isOpaque: false))], format: .png), as: .png,
            options: .init())
        let grey = try PixelBuffer(width: 200, height: 200)
        for y in 0..<200 { grey.row(y).update(repeating: 128, count: 4 * 200) }
        let source = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: grey.freeze(isOpaque: false))], format: .png), as: .png,
            options: .init())
        let request = try ImageRequest.parse(path: "/unsafe/filters:frame(example.com/f.png)/example.com/a.png")
        XCTAssertThrowsError(
            try ImageProcessor(maxPixels: 1_000_000).process(
                source, request: request, watermarks: ["example.com/f.png": patchData])
        ) { error in
            XCTAssertEqual((error as? ImageServiceError)?.status, 422)
            XCTAssertEqual((error as? ImageServiceError)?.code, .tooManyPixels)
        }
    }
}
