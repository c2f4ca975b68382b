import Foundation
import XCTest

@testable import ImageKit

/// The per-image quality search: targets met, bounds kept, the size method's budget never
/// exceeded, a tighter target never fewer bytes.
final class AutoQualityTests: XCTestCase {
    let coders = ImageCodersManager.shared

    func photo(width: Int = 320) throws -> DecodedImage {
        DecodedImage(frames: [ImageFrame(bitmap: try PerceptualMetricTests.photo(width: width))], format: .png)
    }

    /// Four flat colours: reaches any target at a low quality.
    func graphic() throws -> DecodedImage {
        let buffer = try PixelBuffer(width: 200, height: 150)
        for y in 0..<150 {
            for x in 0..<200 {
                let block = (x / 50 + y / 50) % 4, pixel = buffer.row(y) + x * 4
                (pixel[0], pixel[1], pixel[2], pixel[3]) =
                    ([250, 20, 30, 240][block], [250, 120, 30, 200][block], [250, 200, 160, 0][block], 255)
            }
        }
        return DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png)
    }

    func score(_ data: Data, against image: DecodedImage) throws -> Double {
        try image.frames[0].bitmap.ssimulacra2(of: try coders.decode(data, options: .init()).frames[0].bitmap)
    }

    func testSSIMULACRA2TargetIsMetAtAQualityWithinBounds() throws {
        var formats: [ImageFormat] = [.jpeg, .webp]
        if ImageFormat.avif.isCodecSupported { formats.append(.avif) }
        for image in [try photo(), try graphic()] {
            for format in formats {
                for target in [60.0, 75, 85] {
                    let chosen = try coders.encode(
                        image, as: format, options: .init(), autoQuality: AutoQuality(.ssimulacra2(target: target)))
                    let measured = try score(chosen.data, against: image)
                    XCTAssertEqual(measured, try XCTUnwrap(chosen.score), accuracy: 1e-6, "\(format) \(target)")
                    XCTAssertTrue((10...95).contains(chosen.quality))
                    XCTAssertLessThanOrEqual(chosen.encodes, PerceptualSearch.maxTries + 1)
                    if chosen.quality < 95 {
                        XCTAssertGreaterThanOrEqual(measured, target, "\(format) target \(target) q\(chosen.quality)")
                    }
                    print(
                        "aq \(format) \(image.width)x\(image.height) target \(target): q\(chosen.quality) "
                            + "score \(measured) \(chosen.data.count) B in \(chosen.encodes) encodes")
                }
            }
        }
    }

    /// Near the lowest quality that meets the target: the search stops once a quality that met it
    /// is at most two steps above one that missed, so two steps lower misses.
    func testTheChoiceIsNearTheLowestQualityThatMeetsTheTarget() throws {
        let image = try photo()
        let chosen = try coders.encode(
            image, as: .jpeg, options: .init(),
            autoQuality: AutoQuality(.ssimulacra2(target: 70, allowedError: 0), qualities: 10...95))
        XCTAssertGreaterThan(chosen.quality, 12)
        let lower = try coders.encode(
            image, as: .jpeg, options: .init(quality: Double(chosen.quality - PerceptualSearch.closeEnough) / 100))
        XCTAssertLessThan(try score(lower, against: image), 70, "q\(chosen.quality - 2) should miss 70")
    }

    /// JPEG XL's first guess follows the image's detail: a busier image starts higher (more
    /// distortion than a typical photo at a quality), a flat one lower; JPEG has no such model.
    func testJPEGXLExpectsMoreDistortionFromMoreDetail() throws {
        let quiet = try XCTUnwrap(QualityScale.distortionRatio(.jpegXL, detail: { 0.002 }))
        let typical = try XCTUnwrap(QualityScale.distortionRatio(.jpegXL, detail: { 0.02 }))
        let busy = try XCTUnwrap(QualityScale.distortionRatio(.jpegXL, detail: { 0.06 }))
        XCTAssertLessThan(quiet, typical)
        XCTAssertLessThan(typical, busy)
        XCTAssertEqual(typical, 1, accuracy: 0.35, "a typical photo's detail gives about the typical curve")
        XCTAssertNil(QualityScale.distortionRatio(.jpegXL, detail: { 0 }), "no detail: the typical guess")
        XCTAssertNil(QualityScale.distortionRatio(.jpeg, detail: { 0.02 }))
        let first = { (detail: Double) -> Int in
            var search = PerceptualSearch(
                higherIsCloser: true, target: 70, allowedError: 2, bounds: 10...95, format: .jpegXL, detail: { detail })
            var tried: [Int] = []
            _ = try? search.run { quality throws(ImageError) in
                tried.append(quality)
                return (Data(), 71)
            }
            return tried[0]
        }
        XCTAssertLessThan(first(0.002), first(0.02))
        XCTAssertLessThan(first(0.02), first(0.06))
    }

    /// The search's scale: each format's curve rises, and position and quality invert each
    /// other, on the curve, past its ends and on the line formats without one use.
    func testTheQualityScaleInvertsAndRises() {
        for format in [ImageFormat.jpeg, .webp, .avif, .jpegXL, .heic, .png] {
            for higherIsCloser in [true, false] {
                let scale = QualityScale(format: format, higherIsCloser: higherIsCloser)
                if let curve = scale.curve {
                    XCTAssertEqual(curve.count, 19, "\(format)")
                    XCTAssertTrue(zip(curve, curve.dropFirst()).allSatisfy { $0 < $1 }, "\(format) rises")
                }
                var previous = -Double.infinity
                for quality in stride(from: 1.0, through: 100, by: 0.5) {
                    let position = scale.position(quality)
                    XCTAssertGreaterThan(position, previous, "\(format) at \(quality)")
                    XCTAssertEqual(scale.quality(at: position), quality, accuracy: 1e-9, "\(format) at \(quality)")
                    previous = position
                }
            }
        }
        XCTAssertNil(QualityScale(format: .webp, higherIsCloser: false).curve, "DSSIM searches on the quality")
        XCTAssertEqual(QualityScale(format: .png, higherIsCloser: true).quality(at: 70), 63.5, accuracy: 1e-9)
    }

    func testSizeNeverExceedsItsTarget() throws {
        let image = try photo()
        var formats: [ImageFormat] = [.jpeg, .webp]
        if ImageFormat.avif.isCodecSupported { formats.append(.avif) }
        for format in formats {
            var previous = 0
            for target in [4_000, 8_000, 16_000, 64_000] {
                let chosen = try coders.encode(
                    image, as: format, options: .init(),
                    autoQuality: AutoQuality(.size(bytes: target), qualities: 1...95))
                XCTAssertLessThanOrEqual(chosen.data.count, target, "\(format) \(target)")
                XCTAssertGreaterThanOrEqual(chosen.data.count, previous, "a larger budget never gives fewer bytes")
                XCTAssertNil(chosen.score)
                previous = chosen.data.count
            }
        }
    }

    func testATighterDSSIMNeverGivesFewerBytes() throws {
        let image = try photo()
        var previous = 0
        for target in [0.05, 0.02, 0.01, 0.005, 0.002] {
            let chosen = try coders.encode(
                image, as: .jpeg, options: .init(), autoQuality: AutoQuality(.dssim(target: target), qualities: 10...95)
            )
            XCTAssertGreaterThanOrEqual(chosen.data.count, previous, "dssim \(target)")
            if chosen.quality < 95 { XCTAssertLessThanOrEqual(try XCTUnwrap(chosen.score), target) }
            previous = chosen.data.count
        }
    }

    func testLosslessFormatsAndTinyImagesAreEncodedOnce() throws {
        let png = try coders.encode(
            try graphic(), as: .png, options: .init(), autoQuality: AutoQuality(.ssimulacra2(target: 70)))
        XCTAssertEqual(png.encodes, 1)
        XCTAssertNil(png.score)
        let tiny = DecodedImage(frames: [ImageFrame(bitmap: try PerceptualMetricTests.photo(width: 6))], format: .png)
        let jpeg = try coders.encode(
            tiny, as: .jpeg, options: .init(), autoQuality: AutoQuality(.ssimulacra2(target: 70)))
        XCTAssertEqual(jpeg.encodes, 1)
        XCTAssertEqual(jpeg.quality, 95, "too small to measure: the highest quality allowed")
    }

    /// An animation is measured on its first frame and written whole at the quality chosen.
    func testAnAnimationKeepsEveryFrame() throws {
        let first = try PerceptualMetricTests.photo(width: 256)
        let second = try first.blurred(sigma: 3)
        let animation = DecodedImage(
            frames: [ImageFrame(bitmap: first, duration: 0.1), ImageFrame(bitmap: second, duration: 0.1)], format: .gif)
        let chosen = try coders.encode(
            animation, as: .webp, options: .init(), autoQuality: AutoQuality(.ssimulacra2(target: 70)))
        XCTAssertEqual(try coders.decode(chosen.data, options: .init()).frameCount, 2)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(chosen.score), 70)
    }
}
