import Foundation
import XCTest

@testable import ImageKit

final class FormatSniffingTests: XCTestCase {
    private func sniff(_ bytes: [UInt8]) -> ImageSignature { ImageSignature(Data(bytes)) }
    private func sniff(_ text: String) -> ImageSignature { ImageSignature(Data(text.utf8)) }

    func testSignatureTableFromTheBehaviourSpec() {
        XCTAssertEqual(sniff([0xFF, 0xD8, 0xFF, 0xE0]).format, .jpeg)
        XCTAssertEqual(sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]).format, .png)
        XCTAssertEqual(sniff("GIF89a").format, .gif)
        XCTAssertEqual(sniff("GIF87a").format, .gif)
        XCTAssertEqual(sniff([0x49, 0x49, 0x2A, 0x00]).format, .tiff)
        XCTAssertEqual(sniff([0x4D, 0x4D, 0x00, 0x2A]).format, .tiff)
        XCTAssertEqual(sniff([0x49, 0x49, 0x2B, 0x00]).format, .tiff, "BigTIFF")
        XCTAssertEqual(sniff([0x4D, 0x4D, 0x00, 0x2B]).format, .tiff, "BigTIFF")
        XCTAssertEqual(sniff("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ").format, .webp)
        XCTAssertEqual(sniff("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ").format, .unknown)
        XCTAssertEqual(sniff([0, 0, 0, 0x18] + Array("ftypheic".utf8) + [0, 0, 0, 0]).format, .heic)
        XCTAssertEqual(sniff([0, 0, 0, 0x18] + Array("ftypmif1".utf8) + [0, 0, 0, 0]).format, .heif)
        XCTAssertEqual(sniff([0, 0, 0, 0x18] + Array("ftypavif".utf8) + [0, 0, 0, 0]).format, .avif)
        XCTAssertEqual(sniff([0, 0, 0, 0x18] + Array("ftypisom".utf8) + [0, 0, 0, 0]).format, .unknown)
        XCTAssertEqual(sniff("%PDF-1.4\n").format, .pdf)
        XCTAssertEqual(sniff("<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>").format, .svg)
        XCTAssertEqual(sniff("<html><body>404</body></html>").format, .unknown)
        XCTAssertEqual(sniff([]).format, .unknown)
        XCTAssertEqual(sniff([0x52]).format, .unknown)
        XCTAssertEqual(sniff("BM\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}").format, .bmp)
        XCTAssertEqual(sniff([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0]).format, .ico)
    }

    func testPDFDoesNotFallThroughToSVG() {
        // SDWebImage's seed sniffer lacked a `break` after the PDF case (erratum 4).
        XCTAssertEqual(sniff("%!PS-Adobe </svg>").format, .unknown)
    }

    func testAnimationFlags() throws {
        XCTAssertTrue(ImageSignature(try Corpus.data("png/pillow/apng/delay.png")).isAnimated)
        XCTAssertFalse(ImageSignature(try Corpus.data("png/pngsuite/basn6a08.png")).isAnimated)
        XCTAssertTrue(ImageSignature(try Corpus.data("webp/pillow/iss634.webp")).isAnimated)
        XCTAssertFalse(ImageSignature(try Corpus.data("webp/pillow/hopper.webp")).isAnimated)
    }

    func testEveryCorpusFileSniffsAsItsManifestFormat() throws {
        let names: [String: ImageFormat] = [
            "JPEG": .jpeg, "PNG": .png, "GIF": .gif, "WEBP": .webp, "TIFF": .tiff, "HEIC": .heic, "HEIF": .heif,
            "AVIF": .avif, "BMP": .bmp, "PDF": .pdf, "SVG": .svg, "JXL": .jpegXL,
        ]
        for entry in try Corpus.requireEntries() {
            let expected = names[entry.format] ?? .unknown
            XCTAssertEqual(ImageSignature(try entry.data).format, expected, entry.path)
        }
    }

    func testRecognisedFormatsWithoutADecoderAreUnsupported() throws {
        let others = try Corpus.requireEntries().filter {
            $0.path.hasPrefix("other/") && !$0.path.hasPrefix("other/mislabeled")
        }
        XCTAssertGreaterThan(others.count, Corpus.minimum(15))
        var unsupported = 0, decoded = 0
        for entry in others {
            let format = ImageSignature(try entry.data).format
            if format.isDecodingSupported {
                // HEIF, AVIF, JPEG XL, TIFF, BMP, SVG: files the formats-corpus tests have not seen.
                let image = try ImageCodersManager.shared.decode(entry.data)
                XCTAssertGreaterThan(image.width, 0, entry.path)
                if let frames = entry.frames, format != .tiff { XCTAssertEqual(image.frameCount, frames, entry.path) }
                decoded += 1
                continue
            }
            XCTAssertThrowsError(try ImageCodersManager.shared.decode(entry.data), entry.path) { error in
                XCTAssertEqual((error as? ImageError)?.code, .unsupportedFormat, entry.path)
            }
            unsupported += 1
        }
        let missing = try others.filter { !ImageSignature(try $0.data).format.isDecodingSupported }.count
        XCTAssertEqual(unsupported, missing, "the formats this build was made without (traits off)")
        XCTAssertGreaterThan(decoded, Corpus.minimum(FormatsCorpusTests.allFormatsBuiltIn ? 15 : 5))
        // Mislabelled files decode by content, not by name.
        for entry in try Corpus.requireEntries().filter({ $0.path.hasPrefix("other/mislabeled") }) {
            XCTAssertNoThrow(try ImageCodersManager.shared.decode(entry.data), entry.path)
        }
    }

    func testSniffingNeverTrapsOnAnyPrefix() throws {
        for path in ["png/pillow/apng/delay.png", "webp/pillow/iss634.webp", "other/avif/hopper.avif"] {
            guard let data = try? Corpus.data(path) else { continue }
            for length in 0..<min(data.count, 80) { _ = ImageSignature(data.prefix(length)) }
        }
    }
}
