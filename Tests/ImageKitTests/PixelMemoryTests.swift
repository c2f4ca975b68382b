import Foundation
import XCTest
@testable import ImageKit

/// Mapped pixel memory (played animation frames): returned to the system or kept as a bounded
/// spare for the next frame of its size.
final class PixelMemoryTests: XCTestCase {
    override func tearDown() { PixelMemory.releaseSpares() }

    func testAFreedMappedFrameIsReusedForTheNextOfItsSize() throws {
        PixelMemory.releaseSpares()
        let size = 3 << 20
        let first = try XCTUnwrap(PixelMemory.allocate(byteCount: size, alignment: 64, mapped: true))
        first.storeBytes(of: 0xAB, as: UInt8.self)
        (first + size - 1).storeBytes(of: 0xCD, as: UInt8.self)
        PixelMemory.deallocate(first, byteCount: size, mapped: true)
        let second = try XCTUnwrap(PixelMemory.allocate(byteCount: size, alignment: 64, mapped: true))
        XCTAssertEqual(second, first, "the spare is handed out again")
        PixelMemory.deallocate(second, byteCount: size, mapped: true)
        // Another size maps afresh; the spares stay within their limits.
        var pointers: [UnsafeMutableRawPointer] = []
        for index in 0..<8 {
            pointers.append(try XCTUnwrap(PixelMemory.allocate(byteCount: (2 << 20) + index * 4096, alignment: 64, mapped: true)))
        }
        for (index, pointer) in pointers.enumerated() {
            PixelMemory.deallocate(pointer, byteCount: (2 << 20) + index * 4096, mapped: true)
        }
        PixelMemory.releaseSpares()
        let fresh = try XCTUnwrap(PixelMemory.allocate(byteCount: size, alignment: 64, mapped: true))
        XCTAssertEqual(UInt(bitPattern: fresh) % UInt(PixelMemory.hugePageSize), 0, "huge-page aligned")
        PixelMemory.deallocate(fresh, byteCount: size, mapped: true)
    }

    func testPlayedFramesAreMappedAndDecodeAsBefore() throws {
        // 600×500 RGBA frames (1.2 MB) go through mapped memory; the pixels are the eager decode's.
        let frames = (0..<6).map { ImageFrame(bitmap: TestImages.gradient(width: 600, height: 500, seed: $0), duration: 0.1) }
        let data = try ImageCodersManager.shared.encode(DecodedImage(frames: frames, loopCount: 0, format: .gif), as: .gif,
                                                        options: .default)
        let eager = try ImageCodersManager.shared.decode(data)
        let animation = try AnimatedImage(data: data)
        for index in [0, 1, 2, 3, 4, 5, 2, 0, 5] {
            XCTAssertTrue(samePixels(try animation.frame(at: index).bitmap, eager.frames[index].bitmap), "frame \(index)")
        }
        animation.trim()
    }
}
