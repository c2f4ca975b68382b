import CImageCodecs
import XCTest

/// `ik_premultiply_row` (what the resampler runs on every row of an image with alpha): its AVX2
/// and SSE2 loops give the exact bytes of round(c × a / 255) for every alpha and channel value,
/// through runs of opaque and transparent pixels and odd tails, in place or not.
final class PremultiplyTests: XCTestCase {
    func testEveryLoopGivesTheRoundedProduct() {
        var pixels: [UInt8] = []
        for alpha in 0..<256 {
            for value in 0..<256 {
                pixels += [UInt8(value), UInt8(255 - value), UInt8(value ^ 0x5A), UInt8(alpha)]
            }
        }
        // Runs an 8- or 4-pixel block may be all of: opaque, transparent, and mixed at each place.
        for run in 0..<64 {
            let alpha: UInt8 = run % 3 == 0 ? 255 : run % 3 == 1 ? 0 : (run % 8 == 2 ? 255 : 0)
            for index in 0..<(run % 11 + 1) {
                pixels += [UInt8(run * 4 % 256), UInt8(index * 9 % 256), 200, index == run % 5 ? 128 : alpha]
            }
        }
        pixels += [77, 66, 55, 44]  // an odd count: every loop's tail runs too
        let count = pixels.count / 4
        let expected = stride(from: 0, to: pixels.count, by: 4).flatMap { start -> [UInt8] in
            let alpha = Int(pixels[start + 3])
            return (0..<3).map { UInt8((Int(pixels[start + $0]) * alpha + 127) / 255) } + [UInt8(alpha)]
        }
        for avx2 in [true, false] {
            ik_set_avx2_allowed(avx2 ? 1 : 0)
            defer { ik_set_avx2_allowed(1) }
            var out = [UInt8](repeating: 0, count: pixels.count)
            pixels.withUnsafeBytes { row in
                out.withUnsafeMutableBytes { out in
                    ik_premultiply_row(
                        row.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count))
                }
            }
            let differing = zip(out, expected).enumerated().filter { $0.element.0 != $0.element.1 }
            XCTAssertTrue(
                differing.isEmpty,
                "avx2 \(avx2): \(differing.count) bytes differ, first at byte \(differing.first?.offset ?? -1)")
            // In place, from an offset that is not a multiple of any vector's size.
            var inPlace = pixels
            inPlace.withUnsafeMutableBytes { row in
                let start = row.baseAddress!.assumingMemoryBound(to: UInt8.self) + 4
                ik_premultiply_row(start, start, Int32(count - 1))
            }
            XCTAssertEqual(Array(inPlace.dropFirst(4)), Array(expected.dropFirst(4)), "avx2 \(avx2), in place")
        }
    }
}
