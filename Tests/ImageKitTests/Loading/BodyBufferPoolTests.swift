import Foundation
import XCTest

@testable import ImageKit

final class BodyBufferPoolTests: XCTestCase {
    func testReleasedBodiesComeBackAndAreReused() {
        let pool = BodyBufferPool(maxIdleBytes: 1 << 20)
        var buffer = BodyBuffer(pool: pool)
        XCTAssertTrue(buffer.reserve(100_000))
        let bytes = [UInt8](repeating: 9, count: 100_000)
        XCTAssertTrue(bytes.withUnsafeBytes { buffer.append($0.baseAddress!, count: $0.count) })
        let first = buffer.pointer
        var data: Data? = buffer.take()
        XCTAssertEqual(data.map(Array.init), bytes)
        XCTAssertEqual(pool.idleBytes, 0, "a live body keeps its buffer")
        data = nil
        XCTAssertGreaterThanOrEqual(pool.idleBytes, 100_000, "a released body returns its buffer")

        var second = BodyBuffer(pool: pool)
        XCTAssertTrue(second.reserve(90_000))
        XCTAssertEqual(second.pointer, first, "a buffer of a fitting size is reused")
        second.release()
        var tiny = BodyBuffer(pool: pool)
        XCTAssertTrue(tiny.reserve(1_000))
        XCTAssertNotEqual(tiny.pointer, first, "a small body does not pin a much larger buffer")
        tiny.release()
    }

    func testSizeClassesFitTightly() {
        for size in [
            1, 16_383, 16_384, 16_385, 20_480, 20_481, 65_536, 65_537, 100_000, 200_000, 1 << 20, (1 << 20) + 1,
            3_000_000,
        ] {
            let sizeClass = BodyBufferPool.sizeClass(for: size)
            let capacity = BodyBufferPool.capacity(ofClass: sizeClass)
            XCTAssertGreaterThanOrEqual(capacity, size, "\(size)")
            XCTAssertLessThanOrEqual(
                Double(capacity), max(Double(size) * 1.25, 16_384), "\(size): at most a quarter wasted")
            if sizeClass > 0 {
                XCTAssertLessThan(BodyBufferPool.capacity(ofClass: sizeClass - 1), size, "\(size): the smallest class")
            }
        }
    }

    func testGrowsWithoutAnnouncedLengthAndKeepsTheBytes() {
        let pool = BodyBufferPool()
        var buffer = BodyBuffer(pool: pool)
        var expected: [UInt8] = []
        for chunk in 0..<50 {
            let piece = [UInt8](repeating: UInt8(chunk), count: 7_919)
            expected += piece
            XCTAssertTrue(piece.withUnsafeBytes { buffer.append($0.baseAddress!, count: $0.count) })
        }
        XCTAssertEqual(Array(buffer.copy()), expected)
        XCTAssertEqual(Array(buffer.take()), expected)
        XCTAssertEqual(buffer.count, 0)
        XCTAssertTrue(buffer.take().isEmpty)
    }

    func testIdleMemoryStaysWithinBudget() {
        let pool = BodyBufferPool(maxIdleBytes: 256 << 10, maxPooledCapacity: 128 << 10)
        var bodies: [Data] = []
        for _ in 0..<10 {
            var buffer = BodyBuffer(pool: pool)
            XCTAssertTrue(buffer.reserve(60_000))
            [UInt8](repeating: 1, count: 60_000).withUnsafeBytes { _ = buffer.append($0.baseAddress!, count: $0.count) }
            bodies.append(buffer.take())
        }
        var big = BodyBuffer(pool: pool)
        XCTAssertTrue(big.reserve(1 << 20))
        big.release()
        XCTAssertEqual(pool.idleBytes, 0, "buffers over maxPooledCapacity are freed, not kept")
        bodies.removeAll()
        XCTAssertLessThanOrEqual(pool.idleBytes, 256 << 10)
        XCTAssertGreaterThan(pool.idleBytes, 0)
    }
}
