import Foundation
import XCTest

@testable import ImageKit

/// Large pixel memory is mapped: returned to the system or kept as a bounded spare for the next
/// buffer of about its size.
final class PixelMemoryTests: XCTestCase {
    override func tearDown() { PixelMemory.releaseSpares() }

    func testAFreedMappedFrameIsReusedForTheNextOfItsSize() throws {
        PixelMemory.releaseSpares()
        let size = 3 << 20
        let first = try XCTUnwrap(PixelMemory.allocate(byteCount: size, alignment: 64))
        first.storeBytes(of: 0xAB, as: UInt8.self)
        (first + size - 1).storeBytes(of: 0xCD, as: UInt8.self)
        PixelMemory.deallocate(first, byteCount: size)
        let second = try XCTUnwrap(PixelMemory.allocate(byteCount: size, alignment: 64))
        XCTAssertEqual(page(second), page(first), "the spare is handed out again")
        XCTAssertNotEqual(second, first, "at another offset into the page (no 4K aliasing with the last buffer)")
        XCTAssertEqual(Int(bitPattern: second) % 64, 0)
        PixelMemory.deallocate(second, byteCount: size)
        // Another size maps afresh; the spares stay within their limits.
        var pointers: [UnsafeMutableRawPointer] = []
        for index in 0..<8 {
            pointers.append(try XCTUnwrap(PixelMemory.allocate(byteCount: (2 << 20) + index * 4096, alignment: 64)))
        }
        for (index, pointer) in pointers.enumerated() {
            PixelMemory.deallocate(pointer, byteCount: (2 << 20) + index * 4096)
        }
        PixelMemory.releaseSpares()
        let fresh = try XCTUnwrap(PixelMemory.allocate(byteCount: size, alignment: 64))
        XCTAssertEqual(page(fresh) % UInt(PixelMemory.hugePageSize), 0, "the mapping is huge-page aligned")
        PixelMemory.deallocate(fresh, byteCount: size)
    }

    func testASpareServesSmallerBuffersAndTheCachesTrimReleasesIt() throws {
        PixelMemory.releaseSpares()
        let large = 12 << 20, smaller = 9 << 20, tooSmall = 7 << 20
        let first = try XCTUnwrap(PixelMemory.allocate(byteCount: large, alignment: 64))
        PixelMemory.deallocate(first, byteCount: large)
        XCTAssertEqual(
            PixelMemory.spareBytes, PixelMemory.mappedLength(large),
            "the mapping: the bytes, a page for the offset, rounded")
        // At least two thirds of the spare's size: served by it, whole — it comes back at its own
        // length, so the next buffer a little larger than this one still finds it.
        let second = try XCTUnwrap(PixelMemory.allocate(byteCount: smaller, alignment: 64))
        XCTAssertEqual(page(second), page(first))
        XCTAssertEqual(PixelMemory.spareBytes, 0)
        (second + smaller - 1).storeBytes(of: 0x5A, as: UInt8.self)
        PixelMemory.deallocate(second, byteCount: smaller)
        XCTAssertEqual(PixelMemory.spareBytes, PixelMemory.mappedLength(large))
        let larger = try XCTUnwrap(PixelMemory.allocate(byteCount: large - (1 << 20), alignment: 64))
        XCTAssertEqual(page(larger), page(first))
        PixelMemory.deallocate(larger, byteCount: large - (1 << 20))
        // Less: a fresh mapping; the spare stays.
        let third = try XCTUnwrap(PixelMemory.allocate(byteCount: tooSmall, alignment: 64))
        XCTAssertNotEqual(page(third), page(first))
        PixelMemory.deallocate(third, byteCount: tooSmall)
        // Bitmaps go through the same memory; trimming a memory cache releases the spares.
        do { _ = try PixelBuffer(width: 1024, height: 1024).freeze(isOpaque: true) }
        XCTAssertGreaterThan(PixelMemory.spareBytes, 0)
        MemoryCache().trim(toCost: 0)
        XCTAssertEqual(PixelMemory.spareBytes, 0)
        // Nothing beyond the limits is kept.
        let pointers = try (0..<6).map { _ in try XCTUnwrap(PixelMemory.allocate(byteCount: 20 << 20, alignment: 64)) }
        for pointer in pointers { PixelMemory.deallocate(pointer, byteCount: 20 << 20) }
        XCTAssertLessThanOrEqual(PixelMemory.spareBytes, PixelMemory.spareLimitBytes)
        XCTAssertGreaterThan(PixelMemory.spareBytes, 0)
        // The newest spares stay (the oldest made room for them).
        let again = try XCTUnwrap(PixelMemory.allocate(byteCount: 20 << 20, alignment: 64))
        XCTAssertTrue(pointers.suffix(3).map(page).contains(page(again)))
        PixelMemory.deallocate(again, byteCount: 20 << 20)
    }

    func testBuffersPlacedPastACacheLineFreeWhatTheyAllocated() throws {
        // libjpeg-turbo's decodes go 16 bytes past a line (its non-temporal stores need 32-byte
        // alignment); the bitmap frees the allocation it came from, small (malloc) or mapped.
        PixelMemory.releaseSpares()
        let before = PixelMemory.currentBytes
        for (width, height) in [(64, 64), (1000, 700)] {
            let buffer = try PixelBuffer(width: width, height: height, placement: .pastCacheLine)
            XCTAssertEqual(Int(bitPattern: buffer.baseAddress) % 64, 16)
            buffer.row(height - 1)[width * 4 - 1] = 7
            let bitmap = buffer.freeze(isOpaque: false)
            XCTAssertEqual(PixelMemory.currentBytes, before + bitmap.byteCount + 16)
        }
        XCTAssertEqual(PixelMemory.currentBytes, before)
        let unfrozen = try PixelBuffer(width: 300, height: 300, placement: .pastCacheLine)
        XCTAssertEqual(PixelMemory.currentBytes, before + unfrozen.byteCount + 16)
        _ = consume unfrozen
        XCTAssertEqual(PixelMemory.currentBytes, before)
        let jpeg = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: TestImages.gradient(width: 64, height: 48))], format: .jpeg),
            as: .jpeg, options: .init())
        let decoded = try ImageCodersManager.shared.decode(jpeg)
        XCTAssertEqual(Int(bitPattern: decoded.bitmap.baseAddress) % 32, 16)
    }

    func testPlayedFramesAreMappedAndDecodeAsBefore() throws {
        // 600×500 RGBA frames (1.2 MB) go through mapped memory; the pixels are the eager decode's.
        let frames = (0..<6).map {
            ImageFrame(bitmap: TestImages.gradient(width: 600, height: 500, seed: $0), duration: 0.1)
        }
        let data = try ImageCodersManager.shared.encode(
            DecodedImage(frames: frames, loopCount: 0, format: .gif), as: .gif,
            options: .default)
        let eager = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        for index in [0, 1, 2, 3, 4, 5, 2, 0, 5] {
            XCTAssertTrue(
                samePixels(try animation.frame(at: index).bitmap, eager.frames[index].bitmap), "frame \(index)")
        }
        animation.trim()
    }

    private func page(_ pointer: UnsafeMutableRawPointer) -> UInt { UInt(bitPattern: pointer) & ~UInt(4095) }
}
