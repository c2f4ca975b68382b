import Foundation
import XCTest

@testable import ImageKit

/// Lossless formats must round-trip pixel-exactly; lossy ones within the stated PSNR.
final class EncoderRoundTripTests: XCTestCase {
    let coders = ImageCodersManager.shared

    func roundTrip(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions = .default) throws
        -> DecodedImage
    {
        let data = try coders.encode(image, as: format, options: options)
        XCTAssertEqual(ImageSignature(data).format, format)
        return try coders.decode(data)
    }

    func testPNGIsPixelExactWithAndWithoutAlpha() throws {
        for bitmap in [
            TestImages.gradient(width: 67, height: 41), TestImages.gradient(width: 64, height: 33, alpha: true),
        ] {
            let decoded = try roundTrip(TestImages.still(bitmap), as: .png)
            XCTAssertEqual(decoded.bitmap.packedRGBA(), bitmap.packedRGBA())
            XCTAssertEqual(decoded.bitmap.isOpaque, bitmap.isOpaque, "an opaque image is written as RGB")
        }
    }

    func testLosslessWebPIsPixelExact() throws {
        let bitmap = TestImages.gradient(width: 50, height: 30, alpha: true)
        let decoded = try roundTrip(TestImages.still(bitmap), as: .webp, options: ImageEncodingOptions(lossless: true))
        XCTAssertEqual(decoded.bitmap.canonicalSHA256(), bitmap.canonicalSHA256())
    }

    /// Stated bounds: JPEG at quality 0.9 ≥ 30 dB, lossy WebP at 0.9 ≥ 30 dB on a smooth image.
    func testLossyFormatsStayWithinPSNR() throws {
        let bitmap = TestImages.gradient(width: 160, height: 120)
        let jpeg = try roundTrip(TestImages.still(bitmap), as: .jpeg, options: ImageEncodingOptions(quality: 0.9))
        XCTAssertGreaterThan(psnr(jpeg.bitmap, bitmap), 30)
        let webp = try roundTrip(TestImages.still(bitmap), as: .webp, options: ImageEncodingOptions(quality: 0.9))
        XCTAssertGreaterThan(psnr(webp.bitmap, bitmap), 30)
        // Lower quality gives smaller files.
        let small = try coders.encode(TestImages.still(bitmap), as: .jpeg, options: ImageEncodingOptions(quality: 0.2))
        let large = try coders.encode(TestImages.still(bitmap), as: .jpeg, options: ImageEncodingOptions(quality: 0.95))
        XCTAssertLessThan(small.count, large.count)
    }

    /// JPEG encodes write into a pooled buffer of TurboJPEG's worst case for the largest image so
    /// far (up to ``TurboJPEGCompressor/bufferLimit``; beyond it, into libjpeg's own): small, larger
    /// (the buffer grows), small again (a buffer bigger than the JPEG) and beyond the limit, in
    /// turn on one thread so they share a compressor, all round-trip, and the same image gives the
    /// same bytes before and after the buffer grew. A progressive encode first: its compressor
    /// comes back to the pool with a new handle (TurboJPEG keeps the scan script in the old one,
    /// which garbled every later baseline JPEG), and the next baseline encode, which takes it,
    /// writes the same bytes as before.
    func testJPEGEncodesThroughThePooledBufferAtEverySize() throws {
        let small = TestImages.still(TestImages.gradient(width: 33, height: 17))
        let before = try coders.encode(small, as: .jpeg, options: ImageEncodingOptions(quality: 0.9))
        TurboJPEGCompressor.releasePooled()
        let progressive = try roundTrip(
            TestImages.still(TestImages.gradient(width: 120, height: 90)), as: .jpeg,
            options: ImageEncodingOptions(quality: 0.9, progressive: true))
        XCTAssertGreaterThan(psnr(progressive.bitmap, TestImages.gradient(width: 120, height: 90)), 30)
        XCTAssertGreaterThanOrEqual(
            TurboJPEGCompressor.pooledCount, 1, "the progressive encode's compressor is pooled again")
        XCTAssertEqual(
            try coders.encode(small, as: .jpeg, options: ImageEncodingOptions(quality: 0.9)), before,
            "a baseline encode with the compressor a progressive one used")
        for (width, height) in [(16, 16), (640, 480), (33, 17), (1800, 1600)] {
            let bitmap = TestImages.gradient(width: width, height: height)
            let decoded = try roundTrip(
                TestImages.still(bitmap), as: .jpeg, options: ImageEncodingOptions(quality: 0.9))
            XCTAssertEqual([decoded.width, decoded.height], [width, height])
            XCTAssertGreaterThan(psnr(decoded.bitmap, bitmap), 30, "\(width)x\(height)")
        }
        XCTAssertGreaterThan(
            TurboJPEGCompressor.worstCaseSize(width: 1800, height: 1600), TurboJPEGCompressor.bufferLimit,
            "the last size takes the path past the pooled buffer")
        XCTAssertEqual(try coders.encode(small, as: .jpeg, options: ImageEncodingOptions(quality: 0.9)), before)
        // A cache trim frees the pooled compressors with their buffers, as it unmaps spare pixels.
        XCTAssertGreaterThan(TurboJPEGCompressor.pooledCount, 0)
        MemoryCache(configuration: .init(costLimit: 0)).trim(toCost: 0)
        XCTAssertEqual(TurboJPEGCompressor.pooledCount, 0)
        XCTAssertEqual(try coders.encode(small, as: .jpeg, options: ImageEncodingOptions(quality: 0.9)), before)
    }

    func testGIFIsExactForFewColoursAndKeepsTransparency() throws {
        let bitmap = TestImages.blocks(width: 40, height: 24, transparentCorner: true)
        let decoded = try roundTrip(TestImages.still(bitmap), as: .gif)
        XCTAssertEqual(decoded.bitmap.canonicalSHA256(), bitmap.canonicalSHA256())
        XCTAssertEqual(decoded.bitmap[0, 0].a, 0)
    }

    /// Quantised GIF (more than 256 colours): median cut keeps a photo-like image above 25 dB.
    func testGIFQuantisesManyColours() throws {
        let bitmap = TestImages.gradient(width: 96, height: 64)
        let decoded = try roundTrip(TestImages.still(bitmap), as: .gif)
        XCTAssertGreaterThan(psnr(decoded.bitmap, bitmap), 25)
    }

    func testAnimatedGIFAPNGAndWebPStayAnimated() throws {
        let frames = (0..<3).map {
            ImageFrame(bitmap: TestImages.blocks(width: 32, height: 16, colors: 3 + $0), duration: 0.2)
        }
        let animation = DecodedImage(frames: frames, loopCount: 0, format: .gif)
        for format in [ImageFormat.gif, .webp, .png] {
            let options = ImageEncodingOptions(lossless: true)
            let decoded = try roundTrip(animation, as: format, options: options)
            XCTAssertEqual(decoded.frames.count, 3, "\(format)")
            XCTAssertEqual(decoded.loopCount, 0, "\(format)")
            for (index, frame) in decoded.frames.enumerated() {
                XCTAssertEqual(frame.duration, 0.2, accuracy: 0.001, "\(format)")
                XCTAssertEqual(
                    frame.bitmap.canonicalSHA256(), frames[index].bitmap.canonicalSHA256(), "\(format) frame \(index)")
            }
        }
        let still = try roundTrip(animation, as: .png, options: .init(firstFrameOnly: true))
        XCTAssertEqual(still.frames.count, 1, "firstFrameOnly: a still PNG of the first frame")
        XCTAssertTrue(samePixels(still.bitmap, frames[0].bitmap))
    }

    /// Every animated file of the corpus, through the APNG writer: the same frames, durations
    /// and loop count (the writer stores each frame as the rectangle that changed).
    func testEveryCorpusAnimationRoundTripsThroughAPNG() throws {
        let entries = try Corpus.requireEntries().filter {
            $0.isValid && ($0.frames ?? 1) > 1 && ["GIF", "PNG", "WEBP"].contains($0.format)
        }
        XCTAssertGreaterThan(entries.count, Corpus.minimum(50))
        for entry in entries {
            let original = try coders.decode(try entry.data)
            let apng = try coders.encode(original, as: .png, options: .init(compressionLevel: 1))
            XCTAssertTrue(ImageSignature(apng).isAnimated, entry.path)
            let decoded = try coders.decode(apng)
            XCTAssertEqual(decoded.frames.count, original.frames.count, entry.path)
            XCTAssertEqual(decoded.loopCount, original.loopCount, entry.path)
            for (index, (frame, expected)) in zip(decoded.frames, original.frames).enumerated() {
                // APNG readers show delays of 10 ms or less for 100 ms (WebP's do not).
                let shown = expected.duration <= 0.010 ? 0.1 : expected.duration
                XCTAssertEqual(frame.duration, shown, accuracy: 0.0005, "\(entry.path) frame \(index)")
                XCTAssertEqual(
                    frame.bitmap.canonicalSHA256(), expected.bitmap.canonicalSHA256(), "\(entry.path) frame \(index)")
            }
        }
    }

    func testAPNGWriterStoresChangedRectanglesAndLongDelays() throws {
        // Frame 1 changes a 3×2 block; frame 2 equals frame 1.
        let base = TestImages.gradient(width: 40, height: 30)
        var changed = try PixelBuffer(width: 40, height: 30)
        changed.copyPixels(from: base)
        for y in 10..<12 { for x in 5..<8 { (changed.row(y) + 4 * x).update(repeating: 0x7F, count: 4) } }
        let second = changed.freeze(isOpaque: false)
        XCTAssertEqual(APNGEncoding.changedRect(from: base, to: second), PixelRect(x: 5, y: 10, width: 3, height: 2))
        XCTAssertEqual(APNGEncoding.changedRect(from: second, to: second), PixelRect(x: 0, y: 0, width: 1, height: 1))
        XCTAssertEqual(APNGEncoding.delayFraction(0.04).0, 40)
        XCTAssertEqual(APNGEncoding.delayFraction(0.04).1, 1000)
        XCTAssertEqual(APNGEncoding.delayFraction(300).1, 100)
        XCTAssertEqual(APNGEncoding.delayFraction(-1).0, 0)

        let image = DecodedImage(
            frames: [
                ImageFrame(bitmap: base, duration: 0.04), ImageFrame(bitmap: second, duration: 120),
                ImageFrame(bitmap: second, duration: 0.5),
            ], loopCount: 3, format: .png)
        let data = try coders.encode(image, as: .png, options: .default)
        let animation = try AnimatedImage(data: data)
        XCTAssertEqual(animation.durations, [0.04, 120, 0.5])
        XCTAssertEqual(animation.loopCount, 3)
        for index in 0..<3 {
            XCTAssertTrue(samePixels(try animation.frame(at: index).bitmap, image.frames[index].bitmap))
        }
        // The still fallback a viewer without APNG shows is frame 0.
        XCTAssertTrue(
            samePixels(try PNGCoder.decodeStill(data.withUnsafeBytes { $0 }, limits: .default, ignoreCRC: false), base))
    }

    func testPreferredEncodingFormatFollowsCQS03() {
        let opaque = TestImages.still(TestImages.gradient(width: 8, height: 8))
        XCTAssertEqual(opaque.preferredEncodingFormat, .jpeg)
        let alpha = TestImages.still(TestImages.gradient(width: 8, height: 8, alpha: true))
        XCTAssertEqual(alpha.preferredEncodingFormat, .png)
        let animated = DecodedImage(
            frames: [ImageFrame(bitmap: opaque.bitmap), ImageFrame(bitmap: opaque.bitmap)], format: .webp)
        XCTAssertEqual(animated.preferredEncodingFormat, .gif)
        // A bitmap flagged non-opaque whose pixels are all opaque still counts as opaque.
        let buffer = try! PixelBuffer(width: 2, height: 2)
        buffer.baseAddress.initializeMemory(as: UInt8.self, repeating: 255, count: buffer.byteCount)
        let allOpaque = TestImages.still(buffer.freeze(isOpaque: false))
        XCTAssertEqual(allOpaque.preferredEncodingFormat, .jpeg)
    }

    func testEncodingRefusesWhatAFormatCannotHold() {
        let empty = DecodedImage(frames: [], format: .png)
        for format in [ImageFormat.jpeg, .png, .gif, .webp] {
            XCTAssertThrowsError(try coders.encode(empty, as: format, options: .default))
        }
        XCTAssertThrowsError(
            try coders.encode(TestImages.still(TestImages.gradient(width: 2, height: 2)), as: .tiff, options: .default)
        ) { error in
            XCTAssertEqual((error as? ImageError)?.code, .encodingFailed)
        }
    }
}
