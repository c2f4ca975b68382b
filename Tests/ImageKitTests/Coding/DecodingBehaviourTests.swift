import Foundation
import XCTest

@testable import ImageKit

final class DecodingBehaviourTests: XCTestCase {
    /// A PNG whose IHDR declares `width × height` and nothing else of use.
    func pngHeader(width: UInt32, height: UInt32) -> Data {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        bytes += Array("IHDR".utf8)
        for value in [width, height] {
            bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        bytes += [8, 6, 0, 0, 0]
        let crc = crc32(bytes[12...])
        bytes += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        // The start of an IDAT: libpng has read the whole header once it sees one.
        bytes += [0, 0, 0, 2] + Array("IDAT".utf8) + [0x78, 0x9C, 0, 0, 0, 0]
        return Data(bytes)
    }

    func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    func testLimitsRefuseBeforeAllocation() throws {
        let limits = DecodingLimits()
        XCTAssertThrowsError(try limits.check(width: 20000, height: 20000)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .decompressionBomb)
        }
        XCTAssertThrowsError(try limits.check(width: 10000, height: 10000)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .decompressionBomb)
        }
        XCTAssertThrowsError(try limits.check(width: 1000, height: 1000, frames: 100)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .decompressionBomb)
        }
        XCTAssertThrowsError(try limits.check(width: 0, height: 10)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .zeroPixels)
        }
        XCTAssertThrowsError(try limits.check(width: .max, height: .max)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .decompressionBomb)
        }
        XCTAssertNoThrow(try limits.check(width: 65535, height: 1))
        XCTAssertNoThrow(try limits.check(width: 8000, height: 6000))

        // A tight custom limit applies to every decoder.
        let tight = ImageDecodingOptions(limits: DecodingLimits(maxPixelsPerFrame: 20 * 20))
        for path in [
            "jpeg/pillow/flower.jpg", "png/pngsuite/basn6a08.png", "gif/giflib/fire.gif", "webp/pillow/flower.webp",
            "webp/pillow/iss634.webp",
        ] {
            XCTAssertThrowsError(try ImageCodersManager.shared.decode(Corpus.data(path), options: tight), path) {
                error in
                XCTAssertEqual((error as? ImageError)?.code, .decompressionBomb, path)
            }
        }
    }

    func testHugeDeclaredPNGIsABombNotAnAllocation() {
        XCTAssertThrowsError(
            try PNGCoder().decode(pngHeader(width: 100_000, height: 100_000), options: ImageDecodingOptions())
        ) { error in
            XCTAssertEqual((error as? ImageError)?.code, .decompressionBomb)
        }
    }

    /// Every JPEG of the corpus with an EXIF orientation of 2-8: decoded upright by default (the
    /// manifest's stored size turned for 5-8), as stored when asked, and once upright the same
    /// picture as its family's upright file (`Landscape_1.jpg` for `Landscape_6.jpg`,
    /// `hopper.jpg` for `hopper_orientation_6.jpg`) where the corpus has that file.
    func testExifOrientationIsAppliedByDefault() throws {
        var checked = 0, compared = 0
        for entry in try Corpus.requireEntries() where entry.format == "JPEG" && entry.isValid {
            guard let tag = entry.features.split(separator: ",").first(where: { $0.hasPrefix("orientation=") }),
                let value = Int(tag.dropFirst("orientation=".count)), (2...8).contains(value),
                let width = entry.width, let height = entry.height
            else { continue }
            let image = try ImageCodersManager.shared.decode(entry.data)
            XCTAssertEqual(image.orientation.rawValue, value, entry.path)
            XCTAssertTrue(image.isOrientationApplied)
            XCTAssertEqual(image.width, value >= 5 ? height : width, entry.path)
            XCTAssertEqual(image.height, value >= 5 ? width : height, entry.path)

            let stored = try ImageCodersManager.shared.decode(
                entry.data, options: ImageDecodingOptions(appliesOrientation: false))
            XCTAssertFalse(stored.isOrientationApplied)
            XCTAssertEqual(stored.orientation.rawValue, value)
            XCTAssertEqual(stored.width, width, entry.path)
            XCTAssertEqual(stored.height, height, entry.path)
            checked += 1

            let uprightPath = entry.path.replacingOccurrences(of: "_orientation_\(value).jpg", with: ".jpg")
                .replacingOccurrences(of: "_\(value).jpg", with: "_1.jpg")
            if uprightPath != entry.path, let upright = Corpus.entry(uprightPath) {
                // Each family stores the same picture transformed; once oriented they match closely.
                XCTAssertGreaterThan(
                    psnr(image.bitmap, try ImageCodersManager.shared.decode(upright.data).bitmap), 25, entry.path)
                compared += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, Corpus.isFull ? 22 : 8)
        XCTAssertGreaterThanOrEqual(compared, 7, "the hopper family at least")
    }

    func testWebPExifOrientation() throws {
        let plain = try ImageCodersManager.shared.decode(Corpus.data("webp/pillow/hopper.webp"))
        for value in 2...8 {
            let image = try ImageCodersManager.shared.decode(
                Corpus.data("webp/pillow/hopper_orientation_\(value).webp"))
            XCTAssertEqual(image.orientation.rawValue, value)
            XCTAssertGreaterThan(psnr(image.bitmap, plain.bitmap), 25, "orientation \(value)")
        }
    }

    func testOrientationTransformsArePermutations() throws {
        // A 3×2 image with distinct pixels; each orientation maps corners as EXIF defines.
        let buffer = try PixelBuffer(width: 3, height: 2)
        for y in 0..<2 {
            for x in 0..<3 { let p = buffer.row(y) + x * 4; p[0] = UInt8(y * 3 + x); p[1] = 0; p[2] = 0; p[3] = 255 }
        }
        let bitmap = buffer.freeze(isOpaque: true)
        func red(_ b: Bitmap) -> [[UInt8]] { (0..<b.height).map { y in (0..<b.width).map { x in b[x, y].r } } }
        XCTAssertEqual(red(try bitmap.applying(.up)), [[0, 1, 2], [3, 4, 5]])
        XCTAssertEqual(red(try bitmap.applying(.upMirrored)), [[2, 1, 0], [5, 4, 3]])
        XCTAssertEqual(red(try bitmap.applying(.down)), [[5, 4, 3], [2, 1, 0]])
        XCTAssertEqual(red(try bitmap.applying(.downMirrored)), [[3, 4, 5], [0, 1, 2]])
        XCTAssertEqual(red(try bitmap.applying(.leftMirrored)), [[0, 3], [1, 4], [2, 5]])
        XCTAssertEqual(red(try bitmap.applying(.right)), [[3, 0], [4, 1], [5, 2]])
        XCTAssertEqual(red(try bitmap.applying(.rightMirrored)), [[5, 2], [4, 1], [3, 0]])
        XCTAssertEqual(red(try bitmap.applying(.left)), [[2, 5], [1, 4], [0, 3]])
    }

    func testCMYKJPEGConvertsToRGB() throws {
        let cmyk = try ImageCodersManager.shared.decode(Corpus.data("jpeg/pillow/pil_sample_cmyk.jpg"))
        let rgb = try ImageCodersManager.shared.decode(Corpus.data("jpeg/pillow/pil_sample_rgb.jpg"))
        XCTAssertGreaterThan(psnr(cmyk.bitmap, rgb.bitmap), 20, "the CMYK sample shows the same picture as the RGB one")
    }

    func testCostCountsPaddedRowsAndFrames() throws {
        let image = try ImageCodersManager.shared.decode(Corpus.data("gif/gif-test-suite/animated_loop.gif"))
        XCTAssertEqual(image.cost, image.bitmap.bytesPerRow * 100 * 4)
        let odd = try PixelBuffer(width: 3, height: 5)
        let stride = odd.bytesPerRow
        XCTAssertGreaterThanOrEqual(stride, 12)
        let still = TestImages.still(odd.freeze(isOpaque: true))
        XCTAssertEqual(still.cost, stride * 5)
    }

    func testLastRegisteredCoderWins() throws {
        struct FakePNG: ImageCoding {
            func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .png }
            func canEncode(_ format: ImageFormat) -> Bool { false }
            func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
                TestImages.still(TestImages.gradient(width: 1, height: 1), format: .png)
            }
            func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
                -> Data
            {
                throw ImageError(.encodingFailed, "no")
            }
        }
        let manager = ImageCodersManager()
        let data = try Corpus.data("png/pngsuite/basn6a08.png")
        XCTAssertEqual(try manager.decode(data).width, 32)
        manager.add(FakePNG())
        XCTAssertEqual(try manager.decode(data).width, 1)
        XCTAssertEqual(
            try manager.encode(TestImages.still(TestImages.gradient(width: 2, height: 2)), as: .png, options: .default)
                .isEmpty, false,
            "encoding still falls back to the PNG coder that can encode")
    }

    func testConcurrentDecodesShareCodersSafely() throws {
        let files = try [
            "jpeg/pillow/flower.jpg", "png/pngsuite/basi6a16.png", "gif/giflib/fire.gif", "webp/pillow/iss634.webp",
        ].map(Corpus.data)
        let expected = try files.map { try ImageCodersManager.shared.decode($0).bitmap.canonicalSHA256() }
        DispatchQueue.concurrentPerform(iterations: 32) { index in
            let image = try? ImageCodersManager.shared.decode(files[index % files.count])
            XCTAssertEqual(image?.bitmap.canonicalSHA256(), expected[index % files.count])
        }
    }
}
