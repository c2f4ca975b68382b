import CWebP
import Foundation
import XCTest

@testable import ImageKit

/// Lazy animation frames (`AnimatedImage`): the same frames as the eager decode, in order and by
/// random access, from the headers' counts; bounded replay and memory.
final class AnimatedImageTests: XCTestCase {
    /// The corpus's valid animated GIFs, APNGs and WebPs.
    func animatedEntries() throws -> [Corpus.Entry] {
        try Corpus.requireEntries().filter {
            $0.isValid && ($0.frames ?? 1) > 1 && ["GIF", "PNG", "WEBP"].contains($0.format)
        }
    }

    func testLazyFramesEqualTheEagerDecodeInOrderAndByRandomAccess() throws {
        let entries = try animatedEntries()
        XCTAssertGreaterThan(entries.count, Corpus.minimum(50))
        var generator = SystemRandomNumberGenerator()
        for entry in entries {
            let data = try entry.data
            let eager: DecodedImage
            do { eager = try ImageCodersManager.shared.decode(data) } catch {
                XCTFail("\(entry.path): eager decode failed: \(error)")
                continue
            }
            let lazy: AnimatedImage
            do { lazy = try AnimatedImage(data: data) } catch {
                XCTFail("\(entry.path): \(error)")
                continue
            }
            XCTAssertEqual(lazy.frameCount, eager.frames.count, entry.path)
            XCTAssertEqual(lazy.durations, eager.frames.map(\.duration), entry.path)
            XCTAssertEqual(lazy.loopCount, eager.loopCount, entry.path)
            XCTAssertEqual(lazy.canvasSize, PixelSize(width: eager.width, height: eager.height), entry.path)
            guard lazy.frameCount == eager.frames.count else { continue }
            let count = lazy.frameCount
            var order = Array(0..<count)  // in order
            order += Array((0..<count).reversed())  // backwards
            order += (0..<count).map { _ in Int.random(in: 0..<count, using: &generator) }  // anywhere
            for index in order {
                do {
                    let frame = try lazy.frame(at: index)
                    XCTAssertTrue(samePixels(frame.bitmap, eager.frames[index].bitmap), "\(entry.path) frame \(index)")
                    XCTAssertEqual(frame.duration, eager.frames[index].duration)
                } catch {
                    XCTFail("\(entry.path) frame \(index): \(error)")
                    break
                }
            }
            for outside in [-1, count] {
                XCTAssertThrowsError(try lazy.frame(at: outside), entry.path) { error in
                    XCTAssertEqual((error as? ImageError)?.code, .invalidArgument)
                }
            }
        }
    }

    /// A 120-frame GIF of 64×64 with a moving block over a partly transparent background.
    static func longGIF(frames: Int = 120) throws -> Data {
        let images = (0..<frames).map { index -> ImageFrame in
            let buffer = try! PixelBuffer(width: 64, height: 64)
            for y in 0..<64 {
                let row = buffer.row(y)
                for x in 0..<64 {
                    let inBlock = (x - index % 64 + 64) % 64 < 8
                    row[x * 4] = UInt8(truncatingIfNeeded: index * 2)
                    row[x * 4 + 1] = inBlock ? 255 : UInt8(y * 4)
                    row[x * 4 + 2] = UInt8(x * 4)
                    row[x * 4 + 3] = (x + y) % 9 == 0 ? 0 : 255
                }
            }
            return ImageFrame(bitmap: buffer.freeze(isOpaque: false), duration: 0.05)
        }
        return try ImageCodersManager.shared.encode(
            DecodedImage(frames: images, loopCount: 0, format: .gif), as: .gif, options: .default)
    }

    func testSeeksReplayFewerFramesThanTheCheckpointInterval() throws {
        let data = try Self.longGIF()
        let eager = try ImageCodersManager.shared.decode(data)
        let lazy = try AnimatedImage(data: data)
        XCTAssertEqual(lazy.frameCount, 120)
        XCTAssertEqual(lazy.loopCount, 0)
        let interval = lazy.checkpointInterval
        XCTAssertEqual(interval, 8)
        for index in 0..<120 { _ = try lazy.frame(at: index) }  // passes every checkpoint
        XCTAssertEqual(lazy.decodedFrameCount, 120, "in order: one decode per frame")
        for target in [3, 117, 64, 9, 100, 0, 119, 57] {
            let before = lazy.decodedFrameCount
            let frame = try lazy.frame(at: target)
            XCTAssertLessThanOrEqual(lazy.decodedFrameCount - before, interval, "seek to \(target)")
            XCTAssertTrue(samePixels(frame.bitmap, eager.frames[target].bitmap), "frame \(target)")
        }
        let canvas = 64 * 64 * 4
        XCTAssertLessThanOrEqual(lazy.retainedBytes, (120 / interval + 2) * canvas)
        lazy.trim()
        XCTAssertLessThanOrEqual(lazy.retainedBytes, 2 * canvas)
        let frame = try lazy.frame(at: 70)
        XCTAssertTrue(samePixels(frame.bitmap, eager.frames[70].bitmap), "after a trim, from the start")
    }

    func testOtherDataAndDamage() throws {
        let jpeg = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 8, height: 8), format: .jpeg),
            as: .jpeg, options: .default)
        XCTAssertThrowsError(try AnimatedImage(data: jpeg)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .unsupportedFormat)
        }
        XCTAssertThrowsError(try AnimatedImage(data: Data())) {
            XCTAssertEqual(($0 as? ImageError)?.code, .unsupportedFormat)
        }
        // Cut in the middle: the headers count fewer frames, and the last one counted cannot be
        // decoded whole — an error, never a crash.
        let data = try Self.longGIF(frames: 20)
        let cut = data.prefix(data.count * 2 / 3)
        let lazy = try AnimatedImage(data: Data(cut))
        XCTAssertLessThan(lazy.frameCount, 20)
        var failed = false
        for index in 0..<lazy.frameCount {
            do { _ = try lazy.frame(at: index) } catch {
                XCTAssertEqual(error.code, .truncatedData)
                failed = true
            }
        }
        XCTAssertTrue(failed)
        // The limit applies to one canvas.
        var limits = DecodingLimits()
        limits.maxPixelsPerFrame = 63 * 64
        XCTAssertThrowsError(try AnimatedImage(data: data, limits: limits)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .decompressionBomb)
        }
        limits = DecodingLimits()
        limits.maxTotalBytes = 64 * 64 * 4 * 2  // less than the 20 frames, more than one canvas
        XCTAssertEqual(try AnimatedImage(data: data, limits: limits).frame(at: 19).bitmap.width, 64)
    }

    /// The eager decode composites animated WebPs itself; libwebp's `WebPAnimDecoder` stays the
    /// reference: every frame of every animated corpus WebP, byte for byte, and the durations.
    func testEagerWebPFramesAreLibwebpsAnimDecoderFrames() throws {
        var compared = 0
        for entry in try animatedEntries() where entry.format == "WEBP" {
            let data = try entry.data
            let image = try ImageCodersManager.shared.decode(
                data, options: ImageDecodingOptions(appliesOrientation: false))
            let reference: [(pixels: [UInt8], timestamp: Int32)] = data.withUnsafeBytes { bytes in
                var options = WebPAnimDecoderOptions()
                _ = WebPAnimDecoderOptionsInit(&options)
                options.color_mode = MODE_RGBA
                var webp = WebPData(bytes: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), size: bytes.count)
                guard let decoder = WebPAnimDecoderNew(&webp, &options) else { return [] }
                defer { WebPAnimDecoderDelete(decoder) }
                var info = WebPAnimInfo()
                _ = WebPAnimDecoderGetInfo(decoder, &info)
                var frames: [(pixels: [UInt8], timestamp: Int32)] = []
                var canvas: UnsafeMutablePointer<UInt8>?
                var timestamp: Int32 = 0
                while WebPAnimDecoderHasMoreFrames(decoder) != 0,
                    WebPAnimDecoderGetNext(decoder, &canvas, &timestamp) != 0, let canvas
                {
                    frames.append(
                        (
                            Array(
                                UnsafeBufferPointer(
                                    start: canvas, count: Int(info.canvas_width * info.canvas_height) * 4)), timestamp
                        ))
                }
                return frames
            }
            XCTAssertEqual(image.frames.count, reference.count, entry.path)
            var elapsed = 0.0
            for (index, (frame, expected)) in zip(image.frames, reference).enumerated() {
                XCTAssertEqual(frame.bitmap.packedRGBA(), expected.pixels, "\(entry.path) frame \(index)")
                elapsed += frame.duration
                XCTAssertEqual(
                    elapsed, Double(expected.timestamp) / 1000, accuracy: 1e-9, "\(entry.path) frame \(index)")
            }
            compared += 1
        }
        XCTAssertGreaterThanOrEqual(compared, Corpus.minimum(5))
    }
}
