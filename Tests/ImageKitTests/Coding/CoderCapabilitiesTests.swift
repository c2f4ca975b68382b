import Foundation
import XCTest

@testable import ImageKit

/// A coder an application registers gets what the built-in ones get from their capabilities:
/// lazy frames through `AnimatedImage` and the player, progressive previews through the
/// manager, and the built-in coders are found by capability, not by type.
final class CoderCapabilitiesTests: XCTestCase {
    /// "TOYA", width and height (UInt16 LE), the frame count, then per frame its duration in
    /// centiseconds and its RGBA pixels. A format ImageKit does not know: its signature is
    /// `unknown`, and the coder tells it by its leading bytes.
    /// Decode-only: it registers without an encoder.
    struct ToyCoder: AnimatedImageDecoding, ProgressiveImageDecoding {
        static let magic = Array("TOYA".utf8)
        /// Frames the cursors of all toy coders have decoded (how the test sees laziness).
        static let decodedFrames = Locked(0)

        struct Header {
            var size: PixelSize
            var durations: [Double]
            var frameBytes: Int { size.width * size.height * 4 }
            func frameOffset(_ index: Int) -> Int { 9 + index * (1 + frameBytes) + 1 }

            init?(_ data: Data) {
                let bytes = [UInt8](data.prefix(9))
                guard bytes.count == 9, Array(bytes[0..<4]) == ToyCoder.magic else { return nil }
                size = PixelSize(width: Int(bytes[4]) | Int(bytes[5]) << 8, height: Int(bytes[6]) | Int(bytes[7]) << 8)
                let count = Int(bytes[8])
                let frameBytes = size.width * size.height * 4
                durations = (0..<count).map { index in
                    let at = 9 + index * (1 + frameBytes)
                    return at < data.count ? Double(data[data.startIndex + at]) / 100 : 0
                }
            }
        }

        static func encode(_ frames: [(pixels: [UInt8], centiseconds: UInt8)], width: Int, height: Int) -> Data {
            var bytes =
                magic + [
                    UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8),
                    UInt8(frames.count),
                ]
            for frame in frames { bytes += [frame.centiseconds] + frame.pixels }
            return Data(bytes)
        }

        static func frame(_ data: Data, header: Header, index: Int) throws(ImageError) -> Bitmap {
            let start = header.frameOffset(index)
            guard start + header.frameBytes <= data.count else {
                throw ImageError(.truncatedData, "toy frame \(index) is cut")
            }
            let buffer = try PixelBuffer(width: header.size.width, height: header.size.height)
            data.withUnsafeBytes { bytes in
                for y in 0..<header.size.height {
                    buffer.row(y).update(
                        from: (bytes.baseAddress! + start + y * header.size.width * 4).assumingMemoryBound(
                            to: UInt8.self),
                        count: header.size.width * 4)
                }
            }
            decodedFrames.withLock { $0 += 1 }
            return buffer.freeze(isOpaque: false)
        }

        func canDecode(_ signature: ImageSignature) -> Bool { signature.leadingBytes.starts(with: Self.magic) }

        func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
            guard let header = Header(data), !header.durations.isEmpty else {
                throw ImageError(.badImageData, "not a toy image")
            }
            let count = options.firstFrameOnly ? 1 : header.durations.count
            var frames: [ImageFrame] = []
            for index in 0..<count {
                frames.append(
                    ImageFrame(
                        bitmap: try Self.frame(data, header: header, index: index), duration: header.durations[index]))
            }
            return DecodedImage(frames: frames, loopCount: 0, format: .unknown)
        }

        func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo? {
            guard let header = Header(data), header.durations.count > 1 else { return nil }
            return AnimationInfo(canvasSize: header.size, durations: header.durations, loopCount: 0)
        }

        func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
            -> any AnimationFrameCursor
        {
            guard let header = Header(data) else { throw ImageError(.badImageData, "not a toy image") }
            return Cursor(data: data, header: header)
        }

        func makeProgressiveSession(for signature: ImageSignature, options: ImageDecodingOptions) -> (
            any ProgressiveDecodingSession
        )? {
            Session()
        }

        /// Independent frames: a checkpoint is the index alone.
        final class Cursor: AnimationFrameCursor {
            let data: Data
            let header: Header
            private(set) var nextIndex = 0
            init(data: Data, header: Header) { self.data = data; self.header = header }
            func decodeNext() throws(ImageError) -> Bitmap {
                defer { nextIndex += 1 }
                return try ToyCoder.frame(data, header: header, index: nextIndex)
            }
            func skipNext() throws(ImageError) { nextIndex += 1 }
            func checkpoint() throws(ImageError) -> AnimationCheckpoint<Int> {
                AnimationCheckpoint(canvas: nil, position: nextIndex)
            }
            func restore(_ checkpoint: AnimationCheckpoint<Int>) throws(ImageError) { nextIndex = checkpoint.position }
            func rewind() throws(ImageError) { nextIndex = 0 }
        }

        /// A preview once the first frame has arrived whole, and again for each further frame.
        final class Session: ProgressiveDecodingSession {
            private var shown = 0
            func preview(_ data: Data) -> DecodedImage? {
                guard let header = Header(data) else { return nil }
                let complete = (0..<header.durations.count).filter {
                    header.frameOffset($0) + header.frameBytes <= data.count
                }.count
                guard complete > shown, let first = try? ToyCoder.frame(data, header: header, index: 0) else {
                    return nil
                }
                shown = complete
                return DecodedImage(frames: [ImageFrame(bitmap: first)], format: .unknown, isPartial: true)
            }
        }
    }

    /// Six 24×16 frames, each one flat colour.
    static func toyAnimation() -> (data: Data, colors: [[UInt8]]) {
        let colors: [[UInt8]] = (0..<6).map { [UInt8($0 * 40), UInt8(255 - $0 * 40), 7, 255] }
        let frames = colors.map { color in
            (pixels: Array([[UInt8]](repeating: color, count: 24 * 16).joined()), centiseconds: UInt8(5))
        }
        return (ToyCoder.encode(frames, width: 24, height: 16), colors)
    }

    func testARegisteredCoderPlaysLazilyThroughAnimatedImageAndThePlayer() async throws {
        let (data, colors) = Self.toyAnimation()
        let coders = ImageCodersManager()
        coders.add(ToyCoder())
        XCTAssertThrowsError(try AnimatedImage(data: data), "the shared registry does not know the toy format")
        let before = ToyCoder.decodedFrames.withLock { $0 }
        let animation = try AnimatedImage(data: data, coders: coders)
        XCTAssertEqual(animation.frameCount, 6)
        XCTAssertEqual(animation.durations, [Double](repeating: 0.05, count: 6))
        XCTAssertEqual(animation.canvasSize, PixelSize(width: 24, height: 16))
        XCTAssertEqual(ToyCoder.decodedFrames.withLock { $0 } - before, 0, "the headers alone")
        // Random access replays nothing for independent frames: one decode per frame asked.
        for index in [4, 1, 5, 0] {
            XCTAssertEqual(Array(try animation.frame(at: index).bitmap.packedRGBA().prefix(4)), colors[index])
        }
        XCTAssertEqual(ToyCoder.decodedFrames.withLock { $0 } - before, 4)
        var played: [[UInt8]] = []
        for try await step in AnimatedImagePlayer(animation, loops: 1, clock: VirtualClock()) {
            played.append(Array(step.bitmap.packedRGBA().prefix(4)))
        }
        XCTAssertEqual(played, colors)
        // The registry's one-shot decode with lazy frames hands the same animation type back.
        let lazy = try coders.decode(data, options: ImageDecodingOptions(decodesFramesLazily: true))
        XCTAssertTrue(lazy.isLazy)
        XCTAssertEqual(lazy.animation?.frameCount, 6)
    }

    func testARegisteredCoderIsLazyAndProgressiveThroughTheManager() async throws {
        let directory = TemporaryDirectory("capabilities")
        defer { directory.remove() }
        let loader = MockLoader()
        let (data, colors) = Self.toyAnimation()
        loader.answer("/toy.toya", .data(data, chunks: 6, chunkDelay: 0.03))
        let cache = try ImageCache(directory: directory.url, configuration: .init(disk: .init(sweepsAtOpen: false)))
        let coders = ImageCodersManager()
        coders.add(ToyCoder())
        let manager = ImageManager(cache: cache, loader: loader, coders: coders)
        var previews = 0
        var final: ImageLoadResult?
        for try await event in manager.imageEvents(for: URL(string: "mock://host/toy.toya"), options: .progressiveLoad)
        {
            switch event {
            case .preview(let preview):
                XCTAssertNil(final, "no preview after the final image")
                XCTAssertTrue(preview.isPreview)
                XCTAssertEqual(Array(preview.frames[0].bitmap.packedRGBA().prefix(4)), colors[0])
                previews += 1
            case .result(let result): final = result
            default: break
            }
        }
        XCTAssertGreaterThan(previews, 0, "the toy session's previews reach the caller")
        let image = try XCTUnwrap(final?.image)
        let animation = try XCTUnwrap(image.animation, "delivered lazily, as a built-in animation is")
        XCTAssertEqual(animation.frameCount, 6)
        XCTAssertEqual(Array(try animation.frame(at: 3).bitmap.packedRGBA().prefix(4)), colors[3])
    }

    func testTheBuiltInCodersOfferTheirCapabilities() {
        let coders = ImageCodersManager.shared
        XCTAssertNotNil(coders.decoder(for: ImageSignature(format: .gif), as: (any AnimatedImageDecoding).self))
        XCTAssertNotNil(
            coders.decoder(for: ImageSignature(format: .png, isAnimated: true), as: (any AnimatedImageDecoding).self))
        XCTAssertNotNil(
            coders.decoder(for: ImageSignature(format: .webp, isAnimated: true), as: (any AnimatedImageDecoding).self))
        XCTAssertNil(coders.decoder(for: ImageSignature(format: .jpeg), as: (any AnimatedImageDecoding).self))
        XCTAssertNotNil(coders.decoder(for: ImageSignature(format: .jpeg), as: (any EarlyFinishImageDecoding).self))
        for format in [ImageFormat.jpeg, .png, .gif, .webp] {
            XCTAssertNotNil(
                coders.decoder(for: ImageSignature(format: format), as: (any ProgressiveImageDecoding).self),
                "\(format)")
        }
        XCTAssertNil(
            WebPCoder().makeProgressiveSession(for: ImageSignature(format: .webp, isAnimated: true), options: .default))
        XCTAssertEqual(ImageSignature(Data("TOYA1234".utf8)).leadingBytes, Array("TOYA1234".utf8))
        XCTAssertEqual(
            ImageSignature(Data("TOYA1234".utf8)), ImageSignature(format: .unknown),
            "leading bytes are not part of equality")
    }

    /// Animated AVIF and JPEG XL play lazily too (libavif and libjxl frame by frame): every
    /// animated file of the formats corpus, in order, backwards and at random, frame for frame the
    /// eager decode's, with the eager durations and loop count.
    func testAnimatedAVIFAndJPEGXLAreLazyAndMatchTheEagerDecode() throws {
        let entries = FormatsCorpus.entries.filter {
            $0.isValid && $0.kind == "animated" && ($0.format == "AVIF" || $0.format == "JXL")
        }
        #if AVIF && JXL
        XCTAssertGreaterThanOrEqual(entries.count, 8)
        #endif
        for entry in entries {
            let data = try entry.data
            guard ImageCodersManager.shared.canDecode(ImageSignature(data)) else { continue }  // the trait is off
            let eager = try ImageCodersManager.shared.decode(data)
            let animation = try AnimatedImage(data: data)
            XCTAssertEqual(animation.frameCount, eager.frames.count, entry.path)
            XCTAssertEqual(animation.durations, eager.frames.map(\.duration), entry.path)
            XCTAssertEqual(animation.loopCount, eager.loopCount, entry.path)
            let count = eager.frames.count
            for index in Array(0..<count) + Array((0..<count).reversed()) + [count / 2, 0, count - 1, 1 % count] {
                XCTAssertTrue(
                    samePixels(try animation.frame(at: index).bitmap, eager.frames[index].bitmap),
                    "\(entry.path) frame \(index)")
            }
            let lazy = try ImageCodersManager.shared.decode(
                data, options: ImageDecodingOptions(decodesFramesLazily: true))
            XCTAssertTrue(lazy.isLazy, entry.path)
        }
    }
}
