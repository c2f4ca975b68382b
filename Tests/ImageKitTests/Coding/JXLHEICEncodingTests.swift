import Foundation
import XCTest

@testable import ImageKit

/// The JPEG XL (libjxl) and HEIC (libheif + x265) encoders: round trips, lossless, alpha, the
/// speed settings and the maximum file size. Embedding a carried ICC profile is tested with the
/// other encoders (`ColorManagementTests`).
final class JXLHEICEncodingTests: XCTestCase {
    private let coders = ImageCodersManager.shared

    private var formats: [ImageFormat] { TestImages.modernEncodableFormats.filter { $0 != .avif } }

    /// A photo from the formats corpus, cropped to keep the encodes quick.
    private func photo() throws -> DecodedImage {
        let image = try coders.decode(FormatsCorpus.entry("avif/libavif/paris_icc_exif_xmp.avif").data)
        return TestImages.still(try image.bitmap.cropped(to: PixelRect(x: 100, y: 80, width: 240, height: 180)))
    }

    override func setUpWithError() throws {
        if formats.isEmpty { throw XCTSkip("built without the JXL and HEIF traits") }
    }

    func testLossyRoundTripKeepsSizeAndPicture() throws {
        let image = try photo()
        for format in formats {
            XCTAssertTrue(format.isCodecSupported)
            for quality in [0.5, 0.9] {
                let data = try coders.encode(image, as: format, options: ImageEncodingOptions(quality: quality))
                XCTAssertEqual(ImageSignature(data).format, format)
                let decoded = try coders.decode(data)
                XCTAssertEqual(decoded.bitmap.size, image.bitmap.size, "\(format)")
                XCTAssertTrue(decoded.isOpaque, "\(format): an opaque image is written without alpha")
                XCTAssertGreaterThan(
                    clearedPSNR(decoded.bitmap, image.bitmap), quality > 0.8 ? 36 : 30, "\(format) quality \(quality)")
            }
            let low = try coders.encode(image, as: format, options: ImageEncodingOptions(quality: 0.3))
            let high = try coders.encode(image, as: format, options: ImageEncodingOptions(quality: 0.95))
            XCTAssertLessThan(low.count, high.count, "\(format): higher quality costs more bytes")
        }
    }

    func testLosslessKeepsThePixelsAndAlpha() throws {
        let gradient = TestImages.still(TestImages.gradient(width: 64, height: 48, alpha: true))
        for format in formats {
            let data = try coders.encode(gradient, as: format, options: ImageEncodingOptions(lossless: true))
            let decoded = try coders.decode(data)
            XCTAssertFalse(decoded.isOpaque, "\(format) kept the alpha")
            if format == .jpegXL {
                XCTAssertEqual(
                    decoded.bitmap.packedRGBA(clearingTransparent: true),
                    gradient.bitmap.packedRGBA(clearingTransparent: true), "JPEG XL lossless is exact")
            } else {
                // x265 is lossless on the YCbCr it is given: libheif's RGB conversion rounds.
                XCTAssertGreaterThan(clearedPSNR(decoded.bitmap, gradient.bitmap), 40, "\(format)")
            }
            let lossy = try coders.decode(
                coders.encode(gradient, as: format, options: ImageEncodingOptions(quality: 0.9)))
            XCTAssertFalse(lossy.isOpaque, "\(format) lossy kept the alpha")
            // libjxl spends no bits on the colour of (nearly) transparent pixels: compare what
            // shows, the premultiplied colour, and the alpha.
            XCTAssertGreaterThan(premultipliedPSNR(lossy.bitmap, gradient.bitmap), 36, "\(format)")
        }
    }

    func testEverySpeedWritesADecodableFile() throws {
        let image = TestImages.still(TestImages.blocks(width: 96, height: 64))
        for format in formats {
            for speed in [0, 5, 10] {
                let data = try coders.encode(
                    image, as: format, options: ImageEncodingOptions(quality: 0.8, speed: speed))
                XCTAssertEqual(try coders.decode(data).bitmap.size, image.bitmap.size, "\(format) speed \(speed)")
            }
        }
        #if JXL
        XCTAssertEqual(JXLCoder.distance(forQuality: 0.9), 1, accuracy: 0.0001, "cjxl: quality 90 is distance 1")
        XCTAssertEqual(JXLCoder.distance(forQuality: 1), 0.1, accuracy: 0.0001)
        XCTAssertEqual(JXLCoder.distance(forQuality: 0.3), 6.4, accuracy: 0.0001)
        XCTAssertEqual(JXLCoder.distance(forQuality: 0), 25, accuracy: 0.0001)
        #endif
    }

    func testMaxFileSizeFitsTheLimitAtTheHighestQualityThatDoes() throws {
        let image = try photo()
        for format in formats {
            let steps = try XCTUnwrap(ImageCodersManager.qualitySteps(for: format))
            func encoded(_ step: Int) throws -> Data {
                try coders.encode(
                    image, as: format, options: ImageEncodingOptions(quality: Double(step) / Double(steps.upperBound)))
            }
            let smallest = try encoded(steps.lowerBound).count, largest = try encoded(steps.upperBound).count
            let limit = (smallest + largest) / 3
            let data = try coders.encode(
                image, as: format, options: ImageEncodingOptions(quality: 1, maxFileSize: limit))
            XCTAssertLessThanOrEqual(data.count, limit, "\(format)")
            XCTAssertGreaterThan(data.count, smallest, "\(format): better than the lowest quality")
            XCTAssertEqual(try coders.decode(data).bitmap.size, image.bitmap.size, "\(format)")
        }
    }

    func testOtherFormatsAreRefused() throws {
        let image = TestImages.still(TestImages.blocks(width: 8, height: 8))
        #if JXL
        XCTAssertThrowsError(try JXLCoder().encode(image, as: .png, options: .default))
        #endif
        #if HEIF
        XCTAssertThrowsError(try HEIFCoder().encode(image, as: .heif, options: .default))
        #endif
    }

    /// PSNR of the colours as they show over black (premultiplied by alpha), and of the alpha.
    private func premultipliedPSNR(_ a: Bitmap, _ b: Bitmap) -> Double {
        let x = a.packedRGBA(), y = b.packedRGBA()
        var sum = 0.0
        for index in stride(from: 0, to: x.count, by: 4) {
            for channel in 0..<4 {
                let (u, v): (Double, Double) =
                    channel == 3
                    ? (Double(x[index + 3]), Double(y[index + 3]))
                    : (
                        Double(x[index + channel]) * Double(x[index + 3]) / 255,
                        Double(y[index + channel]) * Double(y[index + 3]) / 255
                    )
                sum += (u - v) * (u - v)
            }
        }
        let mean = sum / Double(x.count)
        return mean == 0 ? .infinity : 10 * log10(255 * 255 / mean)
    }
}
