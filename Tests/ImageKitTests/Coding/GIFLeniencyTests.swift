import CGIF
import CImageCodecs
import Foundation
import XCTest

@testable import ImageKit

/// Where browsers show a damaged GIF, ImageKit does too (DESIGN §6, leniency).
final class GIFLeniencyTests: XCTestCase {
    /// Three frames of 32×32 from ImageKit's encoder; the last byte is the trailer.
    static let animation: Data = {
        let frames = (0..<3).map {
            ImageFrame(bitmap: TestImages.blocks(width: 32, height: 32, colors: 3 + $0), duration: 0.2)
        }
        return try! ImageCodersManager.shared.encode(
            DecodedImage(frames: frames, loopCount: 0, format: .gif), as: .gif, options: .default)
    }()

    /// Offsets of the image descriptors (0x2C records) of a GIF.
    static func descriptorOffsets(_ data: Data) -> [Int] {
        var offsets: [Int] = []
        data.withUnsafeBytes { bytes in
            var offset = 13
            if bytes[10] & 0x80 != 0 { offset += 3 << (Int(bytes[10] & 0x07) + 1) }
            func skipSubBlocks(_ start: Int) -> Int {
                var cursor = start
                while cursor < bytes.count {
                    let length = Int(bytes[cursor]); cursor += 1; if length == 0 { break }; cursor += length
                }
                return cursor
            }
            while offset < bytes.count {
                switch bytes[offset] {
                case 0x21: offset = skipSubBlocks(offset + 2)
                case 0x2C:
                    offsets.append(offset)
                    let flags = bytes[offset + 9]
                    var cursor = offset + 10
                    if flags & 0x80 != 0 { cursor += 3 << (Int(flags & 0x07) + 1) }
                    offset = skipSubBlocks(cursor + 1)
                default: return
                }
            }
        }
        return offsets
    }

    func testMissingTrailerDecodesEveryFrame() throws {
        let whole = try ImageCodersManager.shared.decode(Self.animation)
        XCTAssertEqual(Self.animation.last, 0x3B)
        let cut = try ImageCodersManager.shared.decode(Self.animation.dropLast())
        XCTAssertEqual(cut.frames.count, 3)
        XCTAssertFalse(cut.isPartial, "every frame is complete")
        for (a, b) in zip(whole.frames, cut.frames) { XCTAssertEqual(a.bitmap.packedRGBA(), b.bitmap.packedRGBA()) }
    }

    func testCutInsideAFrameIsPartialOnlyWhenPartialImagesAreAllowed() throws {
        let third = try XCTUnwrap(Self.descriptorOffsets(Self.animation).last)
        let cut = Self.animation.prefix(Self.animation.count - 12)  // inside the third frame's image data
        XCTAssertGreaterThan(cut.count, third + 10 + 3 * 256)
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(cut)) {
            XCTAssertEqual(($0 as? ImageError)?.code, .truncatedData)
        }
        let partial = try ImageCodersManager.shared.decode(
            cut, options: ImageDecodingOptions(allowsPartialImages: true))
        XCTAssertTrue(partial.isPartial)
        XCTAssertEqual(partial.frames.count, 3, "two whole frames and the part of the third")
        // A partial image is never cached.
        let directory = TemporaryDirectory("gif-partial")
        defer { directory.remove() }
        let cache = try ImageCache(directory: directory.url, configuration: .init(disk: .init(sweepsAtOpen: false)))
        let stored = expectation(description: "store")
        cache.store(partial, data: cut, forKey: "https://example.com/cut.gif") { _ in stored.fulfill() }
        wait(for: [stored], timeout: 5)
        XCTAssertNil(cache.imageFromMemory(forKey: "https://example.com/cut.gif"))
    }

    func testUnknownBlockBetweenFramesIsSkipped() throws {
        let second = try XCTUnwrap(Self.descriptorOffsets(Self.animation).dropFirst().first)
        // Find the record that starts the second frame's group (its graphic control extension).
        var insertAt = second
        if Self.animation[second - 8] == 0x21 { insertAt = second - 8 }
        var damaged = Self.animation
        damaged.insert(contentsOf: [0x99, 0x42], at: insertAt)
        let image = try ImageCodersManager.shared.decode(damaged)
        XCTAssertEqual(image.frames.count, 3)
        // The frame count that sizes a scale-down budget walks past the stray bytes as the decoder does.
        XCTAssertEqual(damaged.withUnsafeBytes { GIFStructure.imageCount($0) }, 3)
        let whole = try ImageCodersManager.shared.decode(Self.animation)
        XCTAssertEqual(image.frames[2].bitmap.packedRGBA(), whole.frames[2].bitmap.packedRGBA())
    }

    /// ImageKit's LZW decoder (`ik_gif_lzw_decode` with giflib's rules) against giflib's own
    /// line decoder, frame by frame, on every corpus GIF, valid or not: the same indices for every
    /// line giflib produced, a failure exactly where giflib failed, and the same place to go on
    /// reading from after a frame.
    func testLZWDecoderAgreesWithGiflibFrameByFrame() throws {
        let entries = try Corpus.requireEntries().filter { $0.format == "GIF" }
        var frames = 0, failures = 0
        for entry in entries {
            let data = try entry.data
            try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
                guard let (gif, reader) = try? GIFDecoding.open(bytes) else { return }
                defer { GIFDecoding.close(gif) }
                try withExtendedLifetime(reader) {
                    records: while true {
                        var record = UNDEFINED_RECORD_TYPE
                        guard DGifGetRecordType(gif, &record) == GIF_OK else { break }
                        switch record {
                        case IMAGE_DESC_RECORD_TYPE:
                            let descriptorStart = reader.offset
                            guard DGifGetImageDesc(gif) == GIF_OK else { break records }  // code sizes giflib refuses
                            GifFreeSavedImages(gif)
                            gif.pointee.ImageCount = 0
                            let width = Int(gif.pointee.Image.Width), height = Int(gif.pointee.Image.Height)
                            guard width > 0, height > 0, width * height <= 16 << 20 else { break records }
                            var giflib = [UInt8](repeating: 0, count: width * height)
                            var lines = 0
                            while lines < height, DGifGetLine(gif, &giflib[lines * width], Int32(width)) == GIF_OK {
                                lines += 1
                            }
                            var ours = [UInt8](repeating: 0, count: width * height + Int(IK_GIF_LZW_SLACK))
                            var decoded = 0, end = 0
                            let status = ik_gif_lzw_decode(
                                bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count,
                                GIFStructure.imageDataOffset(bytes, descriptorAt: descriptorStart), 0,
                                &ours, width * height, &decoded, &end)
                            frames += 1
                            // giflib fails the last line when the blocks after the last pixel are cut, and
                            // reads a sub-block whole or not at all: where the data is cut, ImageKit also
                            // decodes the bytes of the cut block (as browsers show a GIF still loading).
                            let whole =
                                status == IK_GIF_LZW_TRAILING_TRUNCATED ? height - 1 : min(decoded / width, height)
                            let agreed =
                                lines == height
                                ? status == IK_GIF_LZW_OK
                                : status == IK_GIF_LZW_TRUNCATED
                                    ? whole >= lines : status != IK_GIF_LZW_OK && whole == lines
                            XCTAssertTrue(
                                agreed,
                                "\(entry.path): giflib gave \(lines) of \(height) lines, ImageKit status \(status.rawValue) with \(decoded) indices"
                            )
                            XCTAssertEqual(ours[0..<lines * width], giflib[0..<lines * width], entry.path)
                            guard lines == height else { failures += 1; break records }
                            XCTAssertEqual(end, reader.offset, "\(entry.path): where the next record starts")
                        case EXTENSION_RECORD_TYPE:
                            var code: Int32 = 0
                            var block: UnsafeMutablePointer<GifByteType>?
                            guard DGifGetExtension(gif, &code, &block) == GIF_OK else { break records }
                            while block != nil {
                                guard DGifGetExtensionNext(gif, &block) == GIF_OK else { break records }
                            }
                        default:
                            break records
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(frames, Corpus.minimum(200))
        XCTAssertGreaterThan(failures, 0, "the corpus's damaged GIFs fail inside image data too")
    }
}
