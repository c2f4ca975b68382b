import Foundation
import XCTest

@testable import ImageKit

/// BlurHash and ThumbHash against the reference implementations on PyPI (blurhash 1.1.5,
/// thumbhash-python 1.0.1, in the reference venv `make test` prepares), on the same pixels; the
/// palette, average colour and perceptual hash by their definitions.
final class PlaceholderTests: XCTestCase {
    static let directory = TemporaryDirectory("imagekit-placeholders")

    override class func tearDown() { directory.remove() }

    /// A smooth two-axis gradient with a bright disc and a dark bar: low frequencies in every
    /// direction, colour in every channel. `alpha` fades the left part.
    static func picture(width: Int, height: Int, fadingAlpha: Bool = false) throws -> Bitmap {
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                let u = Double(x) / Double(width), v = Double(y) / Double(height)
                let inDisc = (u - 0.65) * (u - 0.65) + (v - 0.4) * (v - 0.4) < 0.04
                let inBar = v > 0.75 && v < 0.85
                row[x * 4] = inDisc ? 250 : inBar ? 20 : UInt8(40 + 180 * u)
                row[x * 4 + 1] = inDisc ? 230 : inBar ? 30 : UInt8(60 + 150 * v)
                row[x * 4 + 2] = inDisc ? 90 : inBar ? 160 : UInt8(200 - 120 * u * v)
                row[x * 4 + 3] = fadingAlpha ? UInt8(min(255, 255 * u * 1.6)) : 255
            }
        }
        return buffer.freeze(isOpaque: !fadingAlpha)
    }

    func testBlurHashAndThumbHashEqualTheReferenceImplementations() throws {
        let sizes = [
            (64, 48, false), (30, 80, false), (100, 100, false), (57, 31, true), (1, 1, false), (96, 40, true),
        ]
        let components = [[4, 3], [1, 1], [9, 9], [3, 7]]
        var list: [[String: Any]] = []
        var pictures: [Bitmap] = []
        for (index, (width, height, alpha)) in sizes.enumerated() {
            let picture = try Self.picture(width: width, height: height, fadingAlpha: alpha)
            let file = Self.directory.url.appendingPathComponent("\(index).rgba")
            try Data(picture.packedRGBA()).write(to: file)
            list.append(["file": file.path, "width": width, "height": height, "blurhash": components])
            pictures.append(picture)
        }
        let listFile = Self.directory.url.appendingPathComponent("list.json")
        try JSONSerialization.data(withJSONObject: list).write(to: listFile)
        let lines = try ReferencePython.lines(of: "reference.py", [listFile.path])
        XCTAssertEqual(lines.count, sizes.count)
        for (index, line) in lines.enumerated() {
            let reference = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let blurHashes = try XCTUnwrap(reference["blurhash"] as? [String: String])
            for pair in components {
                XCTAssertEqual(
                    try pictures[index].blurHash(componentsX: pair[0], componentsY: pair[1]),
                    blurHashes["\(pair[0])x\(pair[1])"],
                    "\(sizes[index]) \(pair)")
            }
            XCTAssertEqual(
                Data(try pictures[index].thumbHash()).base64EncodedString(), reference["thumbhash"] as? String,
                "\(sizes[index])")
        }
    }

    /// The format's own example: the image on blurha.sh's front page hashes (4×3) to a string of
    /// 28 characters whose first says 4×3 and whose DC is its average colour.
    func testBlurHashShape() throws {
        let hash = try Self.picture(width: 40, height: 30).blurHash()
        XCTAssertEqual(hash.count, 6 + 2 * 11)
        XCTAssertEqual(hash.first, "L", "(4 - 1) + (3 - 1) × 9 = 21 = 'L' in base 83")
        XCTAssertThrowsError(try Self.picture(width: 4, height: 4).blurHash(componentsX: 10, componentsY: 1))
    }

    func testThumbHashScalesALargePictureTo100() throws {
        let large = try Self.picture(width: 400, height: 300).thumbHash()
        let small = try Self.picture(width: 100, height: 75).thumbHash()
        XCTAssertEqual(large.count, small.count)
        // The same picture at two sizes: the same header (average colour, ratio), near AC terms.
        XCTAssertEqual(large[3], small[3])
        let distance = zip(large, small).reduce(0) {
            $0 + abs(Int($1.0 & 15) - Int($1.1 & 15)) + abs(Int($1.0 >> 4) - Int($1.1 >> 4))
        }
        XCTAssertLessThan(distance, large.count * 2)
    }

    func testAverageColourAndPalette() throws {
        let buffer = try PixelBuffer(width: 10, height: 10)
        for y in 0..<10 {
            for x in 0..<10 {
                let pixel = buffer.row(y) + x * 4
                // 60 red, 30 blue, 10 transparent.
                let (r, b, a): (UInt8, UInt8, UInt8) = y < 6 ? (250, 0, 255) : y < 9 ? (0, 250, 255) : (0, 0, 0)
                pixel[0] = r; pixel[1] = 10; pixel[2] = b; pixel[3] = a
            }
        }
        let bitmap = buffer.freeze(isOpaque: false)
        XCTAssertEqual(bitmap.averageColor(), RGBAColor(red: 167, green: 10, blue: 83, alpha: 255))
        XCTAssertEqual(
            bitmap.averageColor(ignoringTransparent: false), RGBAColor(red: 150, green: 10, blue: 75, alpha: 230))
        XCTAssertEqual(
            try bitmap.palette(maxColors: 2),
            [RGBAColor(red: 250, green: 10, blue: 0), RGBAColor(red: 0, green: 10, blue: 250)])
        XCTAssertEqual(try bitmap.palette(maxColors: 16).count, 2, "two colours: two boxes, whatever is asked")
        XCTAssertThrowsError(try bitmap.palette(maxColors: 1))
        let photo = try Self.picture(width: 120, height: 90)
        let palette = try photo.palette(maxColors: 8)
        XCTAssertEqual(palette.count, 8)
        XCTAssertEqual(Set(palette).count, 8)
    }

    /// pHash: the same picture recompressed and resized is a few bits away; a different one is
    /// about half the bits away.
    func testPerceptualHashIsNearForTheSamePictureAndFarForAnother() throws {
        let picture = try Self.picture(width: 200, height: 150)
        let jpeg = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: picture)], format: .png), as: .jpeg, options: .init(quality: 0.5))
        let recompressed = try ImageCodersManager.shared.decode(jpeg).frames[0].bitmap.resized(
            to: PixelSize(width: 120, height: 90))
        let original = try picture.perceptualHash()
        XCTAssertLessThanOrEqual((original ^ (try recompressed.perceptualHash())).nonzeroBitCount, 4)
        let other = try Self.picture(width: 200, height: 150).rotated(quarterTurns: 2).perceptualHash()
        XCTAssertGreaterThan((original ^ other).nonzeroBitCount, 16)
        XCTAssertEqual(original.nonzeroBitCount, 32, accuracy: 2, "half the bits over the median")
    }
}

/// Dominant colours: blocks of known hue, saturation and lightness each land on their target.
final class DominantColorTests: XCTestCase {
    func testEachTargetTakesTheSwatchOfItsKind() throws {
        let blocks: [(RGBAColor, Int)] = [
            (RGBAColor(red: 220, green: 30, blue: 40), 30),  // vibrant: saturated, L 0.49
            (RGBAColor(red: 250, green: 150, blue: 170), 20),  // light vibrant: L 0.78, S 0.9
            (RGBAColor(red: 20, green: 30, blue: 110), 20),  // dark vibrant: L 0.25, S 0.69
            (RGBAColor(red: 150, green: 130, blue: 120), 10),  // muted: L 0.53, S 0.12
            (RGBAColor(red: 210, green: 200, blue: 190), 10),  // light muted: L 0.78, S 0.2
            (RGBAColor(red: 60, green: 55, blue: 50), 10),  // dark muted: L 0.22, S 0.09
        ]
        let buffer = try PixelBuffer(width: 10, height: 100)
        var y = 0
        for (colour, rows) in blocks {
            for row in y..<(y + rows) {
                for x in 0..<10 {
                    let pixel = buffer.row(row) + x * 4
                    pixel[0] = colour.red; pixel[1] = colour.green; pixel[2] = colour.blue; pixel[3] = 255
                }
            }
            y += rows
        }
        let colours = buffer.freeze(isOpaque: true).dominantColors()
        XCTAssertEqual(colours.vibrant, blocks[0].0)
        XCTAssertEqual(colours.lightVibrant, blocks[1].0)
        XCTAssertEqual(colours.darkVibrant, blocks[2].0)
        XCTAssertEqual(colours.muted, blocks[3].0)
        XCTAssertEqual(colours.lightMuted, blocks[4].0)
        XCTAssertEqual(colours.darkMuted, blocks[5].0)
        XCTAssertEqual(colours.named.count, 6)

        // Only vivid reds: the muted ones are missing, or built from a found colour when asked.
        let red = try PixelBuffer(width: 4, height: 4)
        red.fill(with: RGBAColor(red: 220, green: 30, blue: 40))
        let only = red.freeze(isOpaque: true)
        XCTAssertNil(only.dominantColors().muted)
        let built = only.dominantColors(buildingMissed: true)
        XCTAssertEqual(built.named.count, 3, "vibrant kinds built from the one found; no muted one to build from")
        let (_, _, lightness) = Bitmap.hsl(try XCTUnwrap(built.lightVibrant))
        XCTAssertEqual(lightness, 0.74, accuracy: 0.01)
    }
}
