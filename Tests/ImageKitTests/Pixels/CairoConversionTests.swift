import CImageCodecs
import XCTest

/// `ik_cairo_to_rgba_row` (cairo's premultiplied ARGB32 words to straight RGBA bytes, for SVG and
/// PDF): its AVX2 loop gives the same bytes as its SSE2 and scalar loops for every alpha and
/// every channel value, premultiplied or not, and reports an opaque row only when it is one.
final class CairoConversionTests: XCTestCase {
    func testEveryLoopGivesTheSameBytes() {
        var words: [UInt32] = []
        for alpha in 0..<256 as Range<UInt32> {
            for value in 0..<256 as Range<UInt32> {
                let inside = alpha == 0 ? 0 : value % (alpha + 1)  // premultiplied: colour <= alpha
                words.append(alpha << 24 | inside << 16 | (inside * 7 % (alpha + 1)) << 8 | inside * 13 % (alpha + 1))
                words.append(alpha << 24 | value << 16 | (255 - value) << 8 | (value ^ 0x5A))  // not premultiplied
            }
        }
        // An odd count, so every loop's tail runs too.
        words.append(0x80_40_20_10)
        func converted(avx2: Bool) -> ([UInt32], Int32) {
            ik_set_avx2_allowed(avx2 ? 1 : 0)
            defer { ik_set_avx2_allowed(1) }
            var row = words
            let opaque = row.withUnsafeMutableBytes {
                ik_cairo_to_rgba_row($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(words.count))
            }
            return (row, opaque)
        }
        let (fast, fastOpaque) = converted(avx2: true)
        let (reference, referenceOpaque) = converted(avx2: false)
        XCTAssertEqual(fastOpaque, 0)
        XCTAssertEqual(referenceOpaque, 0)
        let differing = zip(fast, reference).enumerated().filter { $0.element.0 != $0.element.1 }
        XCTAssertTrue(differing.isEmpty, "\(differing.count) pixels differ, first at \(differing.first?.offset ?? -1)")
        // Straight colour back from premultiplied: alpha 128 and 64 premultiplied give 128 … 255.
        XCTAssertEqual(fast.last, 0x80_20_40_80)

        var opaqueRow = [UInt32](repeating: 0xFF_10_20_30, count: 37)
        let opaque = opaqueRow.withUnsafeMutableBytes {
            ik_cairo_to_rgba_row($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 37)
        }
        XCTAssertEqual(opaque, 1)
        XCTAssertEqual(opaqueRow[36], 0xFF_30_20_10)
    }
}
