import XCTest

@testable import ImageKit

/// `utf8Range(of:)` / `utf8Contains(_:)`, the byte search request parsing uses instead of
/// Foundation's `range(of:)` (which goes through NSString on Linux).
final class UTF8SearchTests: XCTestCase {
    func testFindsTheFirstOccurrenceAsFoundationDoes() {
        let cases: [(String, String)] = [
            ("http://example.com/a.jpg", "://"), ("example.com/a.jpg", "://"), ("://", "://"), ("a://b://c", "://"),
            ("filters:blur(2)/x.jpg", ")/"), ("filters:blur(2)", ")/"), ("", "://"), (":/", "://"), ("::://", "://"),
            ("image/avif,image/webp,*/*", "image/webp"), ("image/webp", "image/webpx"), ("ab", "abc"),
            ("naïve://ü", "://"), ("é)/x", ")/"), ("no-cache, no-store", "no-store"), ("aaab", "aab"),
        ]
        for (text, needle) in cases {
            let expected = text.range(of: needle)
            XCTAssertEqual(text.utf8Range(of: needle), expected, "\(needle) in \(text)")
            XCTAssertEqual(text.utf8Contains(needle), expected != nil, "\(needle) in \(text)")
            if let range = text.utf8Range(of: needle) { XCTAssertEqual(String(text[range]), needle) }
        }
    }

    func testSearchesASubstringInItsOwnIndices() {
        let text = "unsafe/fit-in/filters:quality(80)/host/a.jpg"
        let rest = text[text.range(of: "filters:")!.lowerBound...]
        let end = rest.utf8Range(of: ")/")
        XCTAssertEqual(end, rest.range(of: ")/"))
        XCTAssertEqual(end.map { String(text[$0.upperBound...]) }, "host/a.jpg")
    }

    func testAnEmptyNeedleIsFoundAtTheStart() {
        XCTAssertEqual("abc".utf8Range(of: ""), "abc".startIndex..<"abc".startIndex)
    }
}
