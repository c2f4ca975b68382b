import Foundation
import XCTest
@testable import ImageKit

/// Where browsers show a damaged GIF, ImageKit does too (DESIGN §6, leniency).
final class GIFLeniencyTests: XCTestCase {
    /// Three frames of 32×32 from ImageKit's encoder; the last byte is the trailer.
    static let animation: Data = {
        let frames = (0..<3).map { ImageFrame(bitmap: TestImages.blocks(width: 32, height: 32, colors: 3 + $0), duration: 0.2) }
        return try! ImageCodersManager.shared.encode(DecodedImage(frames: frames, loopCount: 0, format: .gif), as: .gif, options: .default)
    }()

    /// Offsets of the image descriptors (0x2C records) of a GIF.
    static func descriptorOffsets(_ data: Data) -> [Int] {
        var offsets: [Int] = []
        data.withUnsafeBytes { bytes in
            var offset = 13
            if bytes[10] & 0x80 != 0 { offset += 3 << (Int(bytes[10] & 0x07) + 1) }
            func skipSubBlocks(_ start: Int) -> Int {
                var cursor = start
                while cursor < bytes.count { let length = Int(bytes[cursor]); cursor += 1; if length == 0 { break }; cursor += length }
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
        let cut = Self.animation.prefix(Self.animation.count - 12) // inside the third frame's image data
        XCTAssertGreaterThan(cut.count, third + 10 + 3 * 256)
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(cut)) { XCTAssertEqual(($0 as? ImageError)?.code, .truncatedData) }
        let partial = try ImageCodersManager.shared.decode(cut, options: ImageDecodingOptions(allowsPartialImages: true))
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
        let whole = try ImageCodersManager.shared.decode(Self.animation)
        XCTAssertEqual(image.frames[2].bitmap.packedRGBA(), whole.frames[2].bitmap.packedRGBA())
    }

    /// The wide-code LZW decoder (used where giflib refuses code sizes 9–11) against giflib on
    /// every single-frame, full-screen, non-interlaced corpus GIF without transparency.
    func testWideCodeDecoderAgreesWithGiflib() throws {
        let entries = try Corpus.requireEntries().filter { $0.format == "GIF" && $0.isValid && $0.frames == 1 }
        var compared = 0
        for entry in entries {
            let data = try entry.data
            guard let offset = Self.descriptorOffsets(data).first,
                  let image = try? ImageCodersManager.shared.decode(data, options: ImageDecodingOptions(appliesOrientation: false)) else { continue }
            let (frame, palette): (WideCodeFrame?, [UInt8]) = data.withUnsafeBytes { bytes in
                let left = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8, top = Int(bytes[offset + 3]) | Int(bytes[offset + 4]) << 8
                let width = Int(bytes[offset + 5]) | Int(bytes[offset + 6]) << 8, height = Int(bytes[offset + 7]) | Int(bytes[offset + 8]) << 8
                let flags = bytes[offset + 9]
                guard left == 0, top == 0, width == image.width, height == image.height, flags & 0x40 == 0,
                      data.prefix(offset).range(of: Data([0x21, 0xF9])) == nil else { return (nil, []) }
                let table: [UInt8]
                if flags & 0x80 != 0 {
                    table = Array(bytes[(offset + 10)..<(offset + 10 + 3 << (Int(flags & 0x07) + 1))])
                } else if bytes[10] & 0x80 != 0 {
                    table = Array(bytes[13..<(13 + 3 << (Int(bytes[10] & 0x07) + 1))])
                } else {
                    return (nil, [])
                }
                return (WideCodeFrame(bytes, descriptorAt: offset + 1, codeSizes: 2...11), table)
            }
            guard let frame, let indices = try? frame.decode(pixelCount: image.width * image.height) else { continue }
            var expected = [UInt8]()
            for index in indices {
                let i = Int(index)
                expected += i * 3 + 2 < palette.count ? [palette[i * 3], palette[i * 3 + 1], palette[i * 3 + 2], 255] : [0, 0, 0, 255]
            }
            XCTAssertEqual(image.bitmap.packedRGBA(), expected, entry.path)
            compared += 1
        }
        XCTAssertGreaterThan(compared, 20)
    }
}
