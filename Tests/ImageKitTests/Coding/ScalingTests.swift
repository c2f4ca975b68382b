import Foundation
import XCTest

@testable import ImageKit

final class ScalingTests: XCTestCase {
    func target(
        _ width: Int, _ height: Int, box: PixelSize? = nil, preserve: Bool = true, limit: Int? = nil, frames: Int = 1
    ) -> PixelSize {
        DecodeTarget.size(
            for: PixelSize(width: width, height: height), frames: frames,
            options: ImageDecodingOptions(
                thumbnailPixelSize: box, preservesAspectRatio: preserve, scaleDownLimitBytes: limit))
    }

    func testThumbnailArithmetic() {
        XCTAssertEqual(target(1000, 500, box: PixelSize(200)), PixelSize(width: 200, height: 100), "fit inside")
        XCTAssertEqual(target(1000, 500, box: PixelSize(200), preserve: false), PixelSize(200), "exact")
        XCTAssertEqual(target(100, 50, box: PixelSize(200)), PixelSize(width: 100, height: 50), "never upscale")
        XCTAssertEqual(
            target(100, 50, box: PixelSize(width: 300, height: 20), preserve: false), PixelSize(width: 100, height: 20),
            "exact never upscales either side")
        XCTAssertEqual(target(10_000, 1, box: PixelSize(100)), PixelSize(width: 100, height: 1), "1-pixel edge")
        XCTAssertEqual(target(1, 10_000, box: PixelSize(100)), PixelSize(width: 1, height: 100))
        XCTAssertEqual(target(3, 1000, box: PixelSize(10)), PixelSize(width: 1, height: 10), "never below one pixel")
        XCTAssertEqual(
            target(1999, 1000, box: PixelSize(width: 1000, height: 1000)), PixelSize(width: 1000, height: 500))
        XCTAssertEqual(
            target(1000, 500, box: PixelSize(width: 0, height: 10)), PixelSize(width: 1000, height: 500),
            "empty box ignored")
    }

    func testScaleDownArithmetic() {
        let limit = DecodedImage.defaultScaleDownLimitBytes
        let scaled = target(8000, 8000, limit: limit)
        XCTAssertLessThanOrEqual(scaled.pixelCount * 4, limit)
        XCTAssertEqual(scaled.width, scaled.height, "aspect kept")
        XCTAssertEqual(scaled.width, 3965, accuracy: 1, "≈ 3966 per side (DEC-02)")
        XCTAssertEqual(
            target(3000, 2000, limit: limit), PixelSize(width: 3000, height: 2000), "under the limit: unchanged")
        let wide = target(11158, 2156, limit: limit)
        XCTAssertLessThanOrEqual(wide.pixelCount * 4, limit)
        XCTAssertEqual(Double(wide.width) / Double(wide.height), 11158.0 / 2156.0, accuracy: 0.01)
        let animated = target(2000, 2000, limit: limit, frames: 8)
        XCTAssertLessThanOrEqual(animated.pixelCount * 4 * 8, limit, "the budget is shared by the frames")
        // Both: the smaller wins.
        XCTAssertEqual(target(8000, 8000, box: PixelSize(100), limit: limit), PixelSize(100))
    }

    func testExifPortraitThumbnailsAsPortrait() throws {
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(256))
        let portrait = try ImageCodersManager.shared.decode(
            Corpus.data("jpeg/exif-orientation-examples/Portrait_6.jpg"), options: options)
        XCTAssertEqual(portrait.width, 171)
        XCTAssertEqual(portrait.height, 256)
        let stored = try ImageCodersManager.shared.decode(
            Corpus.data("jpeg/exif-orientation-examples/Portrait_6.jpg"),
            options: ImageDecodingOptions(appliesOrientation: false, thumbnailPixelSize: PixelSize(256)))
        XCTAssertEqual(stored.width, 256, "not oriented: the stored landscape fits the box")
        XCTAssertEqual(stored.height, 171)
    }

    func testEveryCorpusFormatThroughAThumbnailDecode() throws {
        let box = PixelSize(48)
        let options = ImageDecodingOptions(appliesOrientation: false, thumbnailPixelSize: box)
        var checked = 0
        for entry in try Corpus.requireEntries()
        where entry.isValid && ["JPEG", "PNG", "GIF", "WEBP"].contains(entry.format) {
            let data = try entry.data
            guard
                let full = try? ImageCodersManager.shared.decode(
                    data, options: ImageDecodingOptions(appliesOrientation: false))
            else { continue }
            let thumbnail = try ImageCodersManager.shared.decode(data, options: options)
            let expected = DecodeTarget.size(for: PixelSize(width: full.width, height: full.height), options: options)
            XCTAssertEqual(thumbnail.width, expected.width, entry.path)
            XCTAssertEqual(thumbnail.height, expected.height, entry.path)
            XCTAssertEqual(thumbnail.frames.count, full.frames.count, entry.path)
            XCTAssertEqual(thumbnail.frames.map(\.duration), full.frames.map(\.duration), entry.path)
            if full.width <= 48 && full.height <= 48 {
                XCTAssertEqual(
                    thumbnail.bitmap.canonicalSHA256(), full.bitmap.canonicalSHA256(),
                    "small images pass through: \(entry.path)")
            }
            checked += 1
        }
        XCTAssertGreaterThan(checked, Corpus.minimum(700))
    }

    /// Every corpus file over the default limit (the full corpus: an 11158x2156 WebP and a
    /// 5250x3450 progressive JPEG; the subset: the JPEG), plus a generated wide WebP and a 12 MP
    /// JPEG that is under the limit.
    func testScaleDownOfTheLargeCorpusFiles() throws {
        let limit = DecodedImage.defaultScaleDownLimitBytes
        let options = ImageDecodingOptions(scaleDownLimitBytes: limit)
        var large: [(String, Data, Int, Int)] = []
        for entry in try Corpus.requireEntries() where entry.isValid && entry.frames == 1 {
            guard let width = entry.width, let height = entry.height, width * height * 4 > limit else { continue }
            large.append((entry.path, try entry.data, width, height))
        }
        XCTAssertGreaterThanOrEqual(large.count, Corpus.isFull ? 2 : 1)
        let wide = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 9000, height: 1800)), as: .webp,
            options: ImageEncodingOptions(quality: 0.5))
        large.append(("generated 9000x1800 WebP", wide, 9000, 1800))
        for (name, data, width, height) in large {
            let image = try ImageCodersManager.shared.decode(data, options: options)
            XCTAssertLessThanOrEqual(image.cost, limit + image.height * 64, name)
            XCTAssertLessThanOrEqual(image.width * image.height * 4, limit, name)
            XCTAssertEqual(
                Double(image.width) / Double(image.height), Double(width) / Double(height), accuracy: 0.01, name)
            XCTAssertLessThan(image.width, width, name)
        }
        // 12 MP is under the limit: unchanged.
        let camera = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 4032, height: 3024)), as: .jpeg, options: ImageEncodingOptions()
        )
        let decoded = try ImageCodersManager.shared.decode(camera, options: options)
        XCTAssertEqual(decoded.width * decoded.height, 4032 * 3024)
    }

    func testJPEGThumbnailMatchesFullDecodePlusResample() throws {
        let data = try Corpus.data("jpeg/sdwebimage/TestImageLarge.jpg")
        let box = PixelSize(256)
        let fast = try ImageCodersManager.shared.decode(data, options: ImageDecodingOptions(thumbnailPixelSize: box))
        let full = try ImageCodersManager.shared.decode(data)
        let slow = try full.bitmap.resized(to: PixelSize(width: fast.width, height: fast.height))
        XCTAssertGreaterThan(
            psnr(fast.bitmap, slow), 35, "DCT scaling plus Lanczos stays close to the full-resolution path")
    }

    /// Lossy WebP with alpha is scaled by libwebp (to four times the target) before the Lanczos
    /// step; against the whole decode + premultiplied resample it stays ≥ 38 dB in
    /// premultiplied colour, ≥ 40 dB in nine cases of ten (corpus files of 128 px and more, and a
    /// photo with soft and hard alpha edges). libwebp averages colour without alpha weights.
    func testLossyAlphaWebPThumbnailsMatchTheWholeDecode() throws {
        var sources: [(String, Data)] = []
        for entry in try Corpus.requireEntries()
        where entry.format == "WEBP" && entry.isValid && entry.features.contains("webp=lossy,alpha")
            && (entry.width ?? 0) >= 128 && entry.frames == 1
        {
            sources.append((entry.path, try entry.data))
        }
        var buffer = try PixelBuffer(width: 1200, height: 900)
        let photo = TestImages.gradient(width: 1200, height: 900, seed: 3)
        for y in 0..<900 {
            let row = buffer.row(y)
            for x in 0..<1200 {
                let pixel = photo[x, y]
                let distance = ((x - 600) * (x - 600) + (y - 450) * (y - 450))
                let alpha = x > 900 ? 0 : max(0, min(255, 255 - (distance - 90_000) / 300))
                row[4 * x] = pixel.r; row[4 * x + 1] = pixel.g; row[4 * x + 2] = pixel.b; row[4 * x + 3] = UInt8(alpha)
            }
        }
        let synthetic = DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: false))], format: .webp)
        sources.append(
            (
                "synthetic 1200x900",
                try ImageCodersManager.shared.encode(synthetic, as: .webp, options: .init(quality: 0.8))
            ))
        var lowest = Double.infinity, compared = 0, below40 = 0
        for (name, data) in sources {
            let full = try ImageCodersManager.shared.decode(data)
            for divisor in [3, 5, 9] {
                let box = PixelSize(width: max(1, full.width / divisor), height: max(1, full.height / divisor))
                let thumbnail = try ImageCodersManager.shared.decode(data, options: .init(thumbnailPixelSize: box))
                let expected = try full.bitmap.resized(to: PixelSize(width: thumbnail.width, height: thumbnail.height))
                let quality = premultipliedPSNR(thumbnail.bitmap, expected)
                lowest = min(lowest, quality)
                compared += 1
                if quality < 40 { below40 += 1 }
                XCTAssertGreaterThan(quality, 38, "\(name) at 1/\(divisor)")
            }
        }
        print(
            "lossy alpha WebP thumbnails: \(compared) compared, \(below40) below 40 dB, lowest \(lowest) dB (premultiplied)"
        )
        XCTAssertGreaterThanOrEqual(compared, Corpus.minimum(20))
        XCTAssertLessThanOrEqual(below40 * 10, compared)
    }

    private func premultipliedPSNR(_ a: Bitmap, _ b: Bitmap) -> Double {
        var squared = 0.0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a[x, y], q = b[x, y]
                for (u, v) in [(p.r, q.r), (p.g, q.g), (p.b, q.b)] {
                    let difference = Double(u) * Double(p.a) / 255 - Double(v) * Double(q.a) / 255
                    squared += difference * difference
                }
                squared += Double((Int(p.a) - Int(q.a)) * (Int(p.a) - Int(q.a)))
            }
        }
        let mse = squared / Double(a.width * a.height * 4)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    func testResamplerKeepsFlatColoursAndHasNoDarkFringes() throws {
        var flat = try PixelBuffer(width: 97, height: 61)
        for y in 0..<61 {
            for x in 0..<97 { let p = flat.row(y) + x * 4; p[0] = 200; p[1] = 100; p[2] = 50; p[3] = 255 }
        }
        let small = try flat.freeze(isOpaque: true).resized(to: PixelSize(width: 13, height: 7))
        for y in 0..<7 {
            for x in 0..<13 { XCTAssertTrue(small[x, y] == (200, 100, 50, 255), "\(x),\(y): \(small[x, y])") }
        }

        // White on the left, fully transparent black on the right: the edge stays white, only
        // its alpha falls off (straight-alpha filtering would darken it towards black).
        let edge = try PixelBuffer(width: 64, height: 8)
        for y in 0..<8 {
            for x in 0..<64 {
                let p = edge.row(y) + x * 4; let white: UInt8 = x < 32 ? 255 : 0; p[0] = white; p[1] = white;
                p[2] = white; p[3] = white
            }
        }
        let shrunk = try edge.freeze(isOpaque: false).resized(to: PixelSize(width: 8, height: 1))
        for x in 0..<8 where shrunk[x, 0].a > 8 {
            XCTAssertGreaterThanOrEqual(shrunk[x, 0].r, 250, "pixel \(x): \(shrunk[x, 0])")
        }
        XCTAssertLessThan(shrunk[7, 0].a, 8)
    }

    func testStreamingPNGThumbnailNeverHoldsTheFullImage() throws {
        // Above PNGCoder.streamingThresholdBytes (smaller sources are decoded whole, faster).
        let source = TestImages.gradient(width: 2400, height: 1800)
        XCTAssertGreaterThan(2400 * 1800 * 4, PNGCoder.streamingThresholdBytes)
        let png = try ImageCodersManager.shared.encode(TestImages.still(source), as: .png, options: .default)
        PixelMemory.resetPeak()
        let baseline = PixelMemory.currentBytes
        let thumbnail = try ImageCodersManager.shared.decode(
            png, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(100)))
        let peak = PixelMemory.peakBytes - baseline
        XCTAssertEqual(thumbnail.width, 100)
        XCTAssertEqual(thumbnail.height, 75)
        XCTAssertLessThan(peak, 2400 * 1800 * 4 / 16, "peak pixel memory \(peak) bytes")
        let slow = try ImageCodersManager.shared.decode(png).bitmap.resized(to: PixelSize(width: 100, height: 75))
        XCTAssertGreaterThan(psnr(thumbnail.bitmap, slow), 50, "streaming and whole-image resampling agree")
    }
}
