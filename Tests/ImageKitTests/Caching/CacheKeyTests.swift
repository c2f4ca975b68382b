import Foundation
import XCTest

@testable import ImageKit

final class CacheKeyTests: XCTestCase {
    func testRenderedKeysMatchSDWebImage() {
        XCTAssertEqual(CacheKey(url: nil).rendered, "")
        XCTAssertEqual(CacheKey(url: URL(string: "https://x.com/a.png")!).rendered, "https://x.com/a.png")
        let pipeline = CacheKey("image.png").transformed(by: "SDImageFlippingTransformer(1,0)")
            .transformed(by: "SDImageRotationTransformer(0.78539816339,1)")
        XCTAssertEqual(
            pipeline.rendered, "image-SDImageFlippingTransformer(1,0)-SDImageRotationTransformer(0.78539816339,1).png")
        XCTAssertEqual(CacheKey("noext").transformed(by: "T").rendered, "noext-T")
        XCTAssertEqual(
            CacheKey("http://x/a.png?s=1#f").transformed(by: "T").rendered, "http://x/a-T.png?s=1#f",
            "only the URL's path changes")
        XCTAssertEqual(
            CacheKey("https://x.com/a.jpg").thumbnail(width: 200, height: 100, preservesAspectRatio: true).rendered,
            "https://x.com/a-Thumbnail({200.000000,100.000000},1).jpg")
    }

    func testThumbnailsAndTransformsNeverShareTheOriginalsIdentity() {
        let original = CacheKey("http://x/a-T.png")
        let transformed = CacheKey("http://x/a.png").transformed(by: "T")
        XCTAssertEqual(original.rendered, transformed.rendered, "the SDWebImage strings collide …")
        XCTAssertNotEqual(original.identity, transformed.identity, "… the identities do not")
        let thumbnail = CacheKey("http://x/a.png").thumbnail(width: 10, height: 10, preservesAspectRatio: false)
        XCTAssertNotEqual(thumbnail.identity, CacheKey("http://x/a.png").identity)
        XCTAssertEqual(thumbnail.original, CacheKey("http://x/a.png"))
        // A source that mimics a variant suffix is escaped.
        let sneaky = CacheKey("http://x/a.png" + CacheKey.variantMarker + "t1:T;")
        XCTAssertNotEqual(sneaky.identity, CacheKey("http://x/a.png").transformed(by: "T").identity)
        // Originals keep their extension on disk.
        XCTAssertTrue(DiskCache.fileName(forKey: transformed.identity).hasSuffix(".png"))
    }

    func testKeyFilters() {
        let signed = URL(string: "https://cdn.example/a.jpg?w=200&X-Amz-Signature=abc&X-Amz-Date=1")!
        let other = URL(string: "https://cdn.example/a.jpg?w=200&X-Amz-Signature=def&X-Amz-Date=2")!
        let filter = CacheKeyFilter.removingQueryItems(["X-Amz-Signature", "X-Amz-Date"])
        XCTAssertEqual(CacheKey(url: signed, filter: filter), CacheKey(url: other, filter: filter))
        XCTAssertEqual(CacheKey(url: signed, filter: filter).rendered, "https://cdn.example/a.jpg?w=200")
        XCTAssertEqual(CacheKey(url: signed, filter: .removingQuery).rendered, "https://cdn.example/a.jpg")
        XCTAssertEqual(CacheKey(url: signed, filter: CacheKeyFilter { $0.lastPathComponent }).rendered, "a.jpg")
    }

    func testOddKeysNeverTrap() {
        let keys = [
            "http://x/a.png?q={x}", "http://[::1", "", "%%%", "http://host", "http://host?x=1", "file:///tmp/a b.png",
            "data:image/png;base64,AAAA", "https://x/\u{1F600}.png", "https://x/a.png#frag{}",
        ]
        for key in keys {
            let variant = CacheKey(key).transformed(by: "T({1,2})").thumbnail(
                width: 1, height: 2, preservesAspectRatio: true)
            XCTAssertFalse(variant.rendered.isEmpty, key)
            XCTAssertNotEqual(variant.identity, CacheKey(key).identity, key)
            _ = DiskCache.fileName(forKey: variant.identity)
        }
    }
}

/// HTTP dates in the three forms RFC 9110 lets a recipient meet.
final class HTTPDateTests: XCTestCase {
    func testTheThreeForms() {
        let expected = Date(timeIntervalSince1970: 784_111_777)  // 1994-11-06 08:49:37 UTC
        XCTAssertEqual(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT"), expected)
        XCTAssertEqual(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT"), expected)
        XCTAssertEqual(HTTPDate.parse("Sun Nov  6 08:49:37 1994"), expected)
        XCTAssertEqual(HTTPDate.parse("Thu, 29 Feb 2024 23:59:60 GMT"), Date(timeIntervalSince1970: 1_709_251_200))
        XCTAssertEqual(HTTPDate.parse("Sat, 01 Jan 2000 00:00:00 GMT"), Date(timeIntervalSince1970: 946_684_800))
    }

    func testMalformedDatesAreNil() {
        for text in [
            "", "0", "-1", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", String(repeating: "9", count: 500),
        ] {
            XCTAssertNil(HTTPDate.parse(text), text)
        }
    }
}
