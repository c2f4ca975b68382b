#if SVG
import Foundation
import XCTest

@testable import ImageKit

/// SVG through librsvg: resvg's renderings as the second implementation, the intrinsic size
/// rules, drawing at the target size, and hostile documents (entities, files, absurd sizes).
/// The network half of "nothing is fetched" is in the integration tests (a listener on 127.0.0.1).
final class SVGTests: XCTestCase {
    private let coders = ImageCodersManager.shared

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/svg/resvg")

    private func svg(_ text: String) -> Data { Data(text.utf8) }

    private func decode(_ text: String, options: ImageDecodingOptions = .default) throws -> DecodedImage {
        try coders.decode(svg(text), options: options)
    }

    private func assertFails(
        _ text: String, _ code: ImageError.Code, options: ImageDecodingOptions = .default,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try decode(text, options: options), file: file, line: line) { error in
            XCTAssertEqual((error as? ImageError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    func testResvgsSuiteDrawsAsResvgDoes() throws {
        XCTAssertTrue(ImageFormat.svg.isDecodingSupported)
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.path).filter {
            $0.hasSuffix(".svg")
        }
        XCTAssertEqual(names.count, 17)
        for name in names.sorted() {
            let drawn = try coders.decode(Data(contentsOf: Self.fixtures.appendingPathComponent(name)))
            XCTAssertEqual(drawn.format, .svg)
            // resvg rendered its references at 1.5 × the documents' size: compare at ours.
            let reference = try coders.decode(
                Data(
                    contentsOf: Self.fixtures.appendingPathComponent(
                        name.replacingOccurrences(of: ".svg", with: ".png"))))
            XCTAssertEqual(Double(reference.width) / Double(drawn.width), 1.5, accuracy: 0.01, name)
            let scaled = try reference.bitmap.resized(to: drawn.bitmap.size)
            // Measured 35.7–49.4 dB over these 17 (antialiasing and the resample differ).
            XCTAssertGreaterThan(Self.psnrOverWhite(drawn.bitmap, scaled), 33, name)
        }
    }

    func testTheIntrinsicSize() throws {
        let open = #"<svg xmlns="http://www.w3.org/2000/svg" "#
        let close = #"><rect width="10" height="10"/></svg>"#
        let cases: [(String, PixelSize)] = [
            (#"width="120" height="80""#, PixelSize(width: 120, height: 80)),
            (#"width="1in" height="2.54cm""#, PixelSize(width: 96, height: 96)),
            (#"width="72pt" height="10.5""#, PixelSize(width: 96, height: 11)),
            (#"viewBox="0 0 40 30""#, PixelSize(width: 40, height: 30)),
            (#"width="100%" height="100%" viewBox="0 0 40 30""#, PixelSize(width: 40, height: 30)),
            (#"width="80" viewBox="0 0 40 30""#, PixelSize(width: 80, height: 60)),
            (#"height="15" viewBox="0 0 40 30""#, PixelSize(width: 20, height: 15)),
            ("", SVGCoder.defaultSize),
        ]
        for (attributes, size) in cases {
            XCTAssertEqual(try decode(open + attributes + close).bitmap.size, size, attributes)
        }
    }

    /// A 10000 × 10000-unit drawing thumbnailed at 256: drawn at 256, so its pixels take about
    /// 256 × 256 × 4 bytes, never the full size; the full-size decode is refused by the limits.
    func testAThumbnailIsDrawnAtItsSize() throws {
        let huge =
            #"<svg xmlns="http://www.w3.org/2000/svg" width="10000" height="10000">"#
            + ##"<circle cx="5000" cy="5000" r="4000" fill="#0a0"/></svg>"##
        var options = ImageDecodingOptions()
        options.thumbnailPixelSize = PixelSize(width: 256, height: 256)
        PixelMemory.resetPeak()
        let before = PixelMemory.peakBytes
        let thumbnail = try decode(huge, options: options)
        XCTAssertEqual(thumbnail.bitmap.size, PixelSize(width: 256, height: 256))
        XCTAssertLessThan(PixelMemory.peakBytes - before, 2 * 256 * 256 * 4, "pixels drawn at the target size")
        // The circle, drawn sharp at 256 (not a blurred shrink): its centre green, a corner empty.
        let pixels = thumbnail.bitmap.packedRGBA()
        XCTAssertEqual(Array(pixels[(128 * 256 + 128) * 4..<(128 * 256 + 128) * 4 + 4]), [0, 170, 0, 255])
        XCTAssertEqual(pixels[3], 0)
        // 100 M pixels of 400 MB are over the default limits.
        assertFails(huge, .decompressionBomb)
        let absurd = #"<svg xmlns="http://www.w3.org/2000/svg" width="100000000" height="100000000"></svg>"#
        assertFails(absurd, .decompressionBomb)
        options.scaleDownLimitBytes = 64 * 64 * 4
        XCTAssertEqual(try decode(absurd, options: options).bitmap.size, PixelSize(width: 64, height: 64))
    }

    /// A drawing smaller than the thumbnail is drawn up to it (a vector has no pixels to lose),
    /// fitted with its ratio, or stretched when the ratio is not kept; a larger one down to it.
    func testAThumbnailLargerThanTheDrawingIsDrawnAtTheThumbnailSize() throws {
        let small =
            #"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="150">"#
            + ##"<rect x="0" y="0" width="100" height="150" fill="#f00"/><rect x="100" y="0" width="100" height="150" fill="#00f"/></svg>"##
        var options = ImageDecodingOptions()
        options.thumbnailPixelSize = PixelSize(256)
        let fitted = try decode(small, options: options)
        XCTAssertEqual(fitted.bitmap.size, PixelSize(width: 256, height: 192))
        // Drawn, not resampled: the edge between the halves stays one pixel sharp.
        XCTAssertTrue(fitted.bitmap[127, 96] == (255, 0, 0, 255))
        XCTAssertTrue(fitted.bitmap[128, 96] == (0, 0, 255, 255))
        options.preservesAspectRatio = false
        XCTAssertEqual(try decode(small, options: options).bitmap.size, PixelSize(256))
        options = ImageDecodingOptions()
        options.thumbnailPixelSize = PixelSize(100)
        XCTAssertEqual(try decode(small, options: options).bitmap.size, PixelSize(width: 100, height: 75))
        XCTAssertEqual(try decode(small).bitmap.size, PixelSize(width: 200, height: 150), "no thumbnail: its own size")
    }

    func testEntityExpansionIsBoundedBeforeParsing() throws {
        // The quadratic blow-up: one 100 KB entity referenced 10 000 times would be a gigabyte
        // (librsvg 2.54 with Debian's libxml2 takes minutes and gigabytes on it).
        let big = String(repeating: "A", count: 100_000)
        let quadratic =
            #"<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a ""# + big + #"">]>"#
            + #"<svg xmlns="http://www.w3.org/2000/svg"><text>"# + String(repeating: "&a;", count: 10_000)
            + "</text></svg>"
        let started = Date()
        assertFails(quadratic, .decompressionBomb)
        // The billion laughs.
        var laughs = #"<!DOCTYPE svg [<!ENTITY l0 "lol">"#
        for level in 1...9 {
            laughs += "<!ENTITY l\(level) \"" + String(repeating: "&l\(level - 1);", count: 10) + "\">"
        }
        laughs += #"]><svg xmlns="http://www.w3.org/2000/svg"><text>&l9;</text></svg>"#
        assertFails(laughs, .decompressionBomb)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "refused before any parser ran")
        // A DOCTYPE hidden in a comment does not hide the real one.
        assertFails(#"<!-- <!DOCTYPE x [ ]> -->"# + quadratic.dropFirst(21), .decompressionBomb)
        // Parameter entities and references in attribute defaults are refused outright.
        assertFails(
            #"<!DOCTYPE svg [<!ENTITY % p "x">]><svg xmlns="http://www.w3.org/2000/svg"></svg>"#, .unsupportedFormat)
        assertFails(
            #"<!DOCTYPE svg [<!ENTITY a "x"><!ATTLIST rect class CDATA "&a;">]><svg xmlns="http://www.w3.org/2000/svg"></svg>"#,
            .unsupportedFormat)
        // Entities within the budget (Illustrator writes its namespaces as entities) draw.
        let modest =
            ##"<!DOCTYPE svg [<!ENTITY ns_svg "http://www.w3.org/2000/svg"><!ENTITY fill "#00f">]>"##
            + #"<svg xmlns="&ns_svg;" width="8" height="8"><rect width="8" height="8" fill="&fill;"/></svg>"#
        XCTAssertEqual(Array(try decode(modest).bitmap.packedRGBA().prefix(4)), [0, 0, 255, 255])
    }

    /// Entities within the budget are expanded by ImageKit and the DOCTYPE dropped (libxml2 never
    /// parses a declaration: librsvg 2.54 leaks their values); comments and CDATA keep theirs, and
    /// undeclared ones stay for the parser.
    func testEntitiesAreExpandedBeforeParsing() throws {
        let document =
            #"<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "x&b;"><!-- ] --><!ENTITY b 'y>'>]>"#
            + #"<svg a="&a;"><!-- &a; --><![CDATA[&b;]]>&b;&lt;&#38;&nbsp;</svg>"#
        let expanded = try Data(document.utf8).withUnsafeBytes { bytes in
            try SVGEntityBudget.expandedDocument(bytes, limit: 1 << 20)
        }
        XCTAssertEqual(
            String(decoding: try XCTUnwrap(expanded), as: UTF8.self),
            #"<?xml version="1.0"?><svg a="xy>"><!-- &a; --><![CDATA[&b;]]>y>&lt;&#38;&nbsp;</svg>"#)
        // A second DOCTYPE (libxml2 would parse its declarations) is refused.
        let twice = document.replacingOccurrences(of: "<svg a=", with: #"<!DOCTYPE s [<!ENTITY c "z">]><svg a="#)
        XCTAssertThrowsError(
            try Data(twice.utf8).withUnsafeBytes { try SVGEntityBudget.expandedDocument($0, limit: 1 << 20) })
        let plain = #"<svg xmlns="http://www.w3.org/2000/svg"></svg>"#
        XCTAssertNil(try Data(plain.utf8).withUnsafeBytes { try SVGEntityBudget.expandedDocument($0, limit: 1 << 20) })
    }

    /// No file is read from inside a document: an absolute `file:` image, a relative one next to
    /// where the document might be, an XInclude and an external entity all draw nothing — while
    /// the same picture as a `data:` URL does, so the check is not vacuous.
    func testNothingOutsideTheDocumentIsRead() throws {
        let directory = TemporaryDirectory("svg-files")
        defer { directory.remove() }
        var buffer = try PixelBuffer(width: 8, height: 8)
        for index in 0..<64 {
            (buffer.baseAddress + index * 4).storeBytes(of: 0xFF00_00FF as UInt32, as: UInt32.self)  // R 255, A 255
        }
        let red = try coders.encode(TestImages.still(buffer.freeze(isOpaque: true)), as: .png, options: .default)
        let file = directory.url.appendingPathComponent("red.png")
        try red.write(to: file)
        try Data("SECRET".utf8).write(to: directory.url.appendingPathComponent("secret.txt"))
        func drawsNothing(_ body: String, _ what: String, doctype: String = "") throws {
            let document =
                doctype
                + #"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" "#
                + #"xmlns:xi="http://www.w3.org/2001/XInclude" width="16" height="16">"# + body + "</svg>"
            let image: DecodedImage
            do { image = try decode(document) } catch { return }  // refused: nothing was read either
            XCTAssertTrue(image.bitmap.packedRGBA().allSatisfy { $0 == 0 }, what)
        }
        try drawsNothing(#"<image width="16" height="16" href="\#(file.absoluteString)"/>"#, "file: href")
        try drawsNothing(#"<image width="16" height="16" xlink:href="\#(file.absoluteString)"/>"#, "xlink:href")
        try drawsNothing(#"<image width="16" height="16" href="red.png"/>"#, "relative href")
        try drawsNothing(#"<image width="16" height="16" href="file:///etc/passwd"/>"#, "/etc/passwd")
        try drawsNothing(
            #"<text y="12" font-size="12"><xi:include href="\#(directory.url.appendingPathComponent("secret.txt").absoluteString)" parse="text"/></text>"#,
            "XInclude")
        try drawsNothing(
            #"<text y="12" font-size="12">&ext;</text>"#, "external entity",
            doctype:
                #"<!DOCTYPE svg [<!ENTITY ext SYSTEM "\#(directory.url.appendingPathComponent("secret.txt").absoluteString)">]>"#
        )
        // The control: the same picture inline.
        let inline = try decode(
            #"<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><image width="16" height="16" "#
                + #"href="data:image/png;base64,\#(red.base64EncodedString())"/></svg>"#)
        XCTAssertEqual(Array(inline.bitmap.packedRGBA().prefix(4)), [255, 0, 0, 255], "a data: URL draws")
    }

    func testBrokenDocumentsAreTypedErrors() throws {
        assertFails(#"<svg xmlns="http://www.w3.org/2000/svg"><rect width="10" height="10"></svg>"#, .badImageData)
        assertFails("<svg>" + String(repeating: "<g>", count: 10) + "</svg>", .badImageData)
        let whole =
            #"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="5" height="5"/></svg>"#
        for cut in [10, 40, whole.utf8.count - 3] {
            XCTAssertThrowsError(try coders.decode(Data(whole.utf8.prefix(cut)))) { error in
                XCTAssertNotNil(error as? ImageError, "cut at \(cut)")
            }
        }
    }

    /// The colours as they show on a white page, compared over RGB.
    static func psnrOverWhite(_ a: Bitmap, _ b: Bitmap) -> Double {
        let x = a.packedRGBA(), y = b.packedRGBA()
        var sum = 0.0
        for index in stride(from: 0, to: x.count, by: 4) {
            let (alphaX, alphaY) = (Double(x[index + 3]), Double(y[index + 3]))
            for channel in 0..<3 {
                let u = (Double(x[index + channel]) * alphaX + 255 * (255 - alphaX)) / 255
                let v = (Double(y[index + channel]) * alphaY + 255 * (255 - alphaY)) / 255
                sum += (u - v) * (u - v)
            }
        }
        let mean = sum / Double(x.count / 4 * 3)
        return mean == 0 ? .infinity : 10 * log10(255 * 255 / mean)
    }
}
#endif
