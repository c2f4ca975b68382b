#if AVIF
import Foundation
import XCTest

@testable import ImageKit

/// The AVIF encoder (round trips) and the maximum-file-size bisection of every lossy encoder.
final class AVIFEncodingTests: XCTestCase {
    private let coders = ImageCodersManager.shared

    /// A photo from the formats corpus, cropped to keep the encodes quick.
    private func photo() throws -> DecodedImage {
        let image = try coders.decode(FormatsCorpus.entry("avif/libavif/paris_icc_exif_xmp.avif").data)
        return TestImages.still(try image.bitmap.cropped(to: PixelRect(x: 100, y: 80, width: 240, height: 180)))
    }

    func testLossyRoundTripKeepsSizeAndPicture() throws {
        let image = try photo()
        for quality in [0.5, 0.9] {
            let data = try coders.encode(image, as: .avif, options: ImageEncodingOptions(quality: quality))
            XCTAssertEqual(ImageSignature(data).format, .avif)
            let decoded = try coders.decode(data)
            XCTAssertEqual(decoded.bitmap.size, image.bitmap.size)
            XCTAssertTrue(decoded.isOpaque)
            XCTAssertGreaterThan(
                clearedPSNR(decoded.bitmap, image.bitmap), quality > 0.8 ? 36 : 30, "quality \(quality)")
        }
        // Higher quality costs more bytes.
        let low = try coders.encode(image, as: .avif, options: ImageEncodingOptions(quality: 0.3))
        let high = try coders.encode(image, as: .avif, options: ImageEncodingOptions(quality: 0.95))
        XCTAssertLessThan(low.count, high.count)
    }

    func testLosslessAndAlphaRoundTrips() throws {
        let gradient = TestImages.still(TestImages.gradient(width: 64, height: 48, alpha: true))
        let lossless = try coders.decode(
            coders.encode(gradient, as: .avif, options: ImageEncodingOptions(lossless: true)))
        XCTAssertEqual(
            lossless.bitmap.packedRGBA(clearingTransparent: true), gradient.bitmap.packedRGBA(clearingTransparent: true)
        )
        let lossy = try coders.decode(coders.encode(gradient, as: .avif, options: ImageEncodingOptions(quality: 0.9)))
        XCTAssertFalse(lossy.isOpaque)
        XCTAssertGreaterThan(clearedPSNR(lossy.bitmap, gradient.bitmap), 30)
    }

    func testSpeedSettingsAllProduceDecodableFiles() throws {
        let image = TestImages.still(TestImages.blocks(width: 96, height: 64))
        for speed in [6, 8, 10] {
            let data = try coders.encode(image, as: .avif, options: ImageEncodingOptions(quality: 0.8, speed: speed))
            XCTAssertEqual(try coders.decode(data).bitmap.size, image.bitmap.size, "speed \(speed)")
        }
    }

    /// SDWebImage's `SDImageCoderEncodeMaxFileSize`: the output fits, and the next quality step
    /// up would not (the encoders are deterministic, so that step is re-encoded to check).
    func testMaxFileSizeFindsTheHighestQualityThatFits() throws {
        let image = try photo()
        for format in [ImageFormat.jpeg, .webp, .avif] {
            let steps = try XCTUnwrap(ImageCodersManager.qualitySteps(for: format))
            func size(_ step: Int) throws -> Int {
                try coders.encode(
                    image, as: format, options: ImageEncodingOptions(quality: Double(step) / Double(steps.upperBound))
                ).count
            }
            let smallest = try size(steps.lowerBound), largest = try size(steps.upperBound)
            let limit = (smallest + largest) / 3
            let data = try coders.encode(
                image, as: format, options: ImageEncodingOptions(quality: 1, maxFileSize: limit))
            XCTAssertLessThanOrEqual(data.count, limit, "\(format)")
            // Which step was it? The one whose output is these bytes.
            var chosen: Int?
            for step in steps.reversed() where try size(step) == data.count {
                let options = ImageEncodingOptions(quality: Double(step) / Double(steps.upperBound))
                if try coders.encode(image, as: format, options: options) == data { chosen = step; break }
            }
            let step = try XCTUnwrap(chosen, "\(format): the output is not one of the quality steps")
            XCTAssertLessThan(step, steps.upperBound)
            XCTAssertGreaterThan(try size(step + 1), limit, "\(format): one step up (\(step + 1)) would have fit")
            XCTAssertEqual(try coders.decode(data).bitmap.size, image.bitmap.size)
        }
    }

    func testMaxFileSizeReturnsTheSmallestWhenNothingFitsAndIgnoresLosslessFormats() throws {
        let image = try photo()
        let tiny = try coders.encode(image, as: .jpeg, options: ImageEncodingOptions(quality: 0.9, maxFileSize: 10))
        XCTAssertEqual(tiny, try coders.encode(image, as: .jpeg, options: ImageEncodingOptions(quality: 0.01)))
        // Within the limit already: the requested quality itself.
        let roomy = try coders.encode(
            image, as: .webp, options: ImageEncodingOptions(quality: 0.7, maxFileSize: 10 << 20))
        XCTAssertEqual(roomy, try coders.encode(image, as: .webp, options: ImageEncodingOptions(quality: 0.7)))
        // PNG has no quality to trade: the limit does not apply.
        let png = try coders.encode(image, as: .png, options: ImageEncodingOptions(maxFileSize: 10))
        XCTAssertGreaterThan(png.count, 10)
    }
}
#endif
