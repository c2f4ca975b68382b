#if PDF
import Foundation
import XCTest

@testable import ImageKit

/// PDF through poppler: poppler's own test files against pdftoppm's renderings (a second
/// rasteriser), the CropBox and /Rotate, passwords, damaged and truncated files, pages, and the
/// limits applied to the pixels drawn.
final class PDFTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/pdf")

    private func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: Self.fixtures.appendingPathComponent(name))
    }

    private func decode(_ data: Data, page: Int? = nil, options: ImageDecodingOptions = .default) throws -> DecodedImage
    {
        var options = options
        if let page { options.pages = .page(page) }
        return try ImageCodersManager.shared.decode(data, options: options)
    }

    private func assertFails(
        _ data: Data, _ code: ImageError.Code, options: ImageDecodingOptions = .default,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(data, options: options), file: file, line: line) {
            error in
            XCTAssertEqual((error as? ImageError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    func testPDFIsDecodable() {
        XCTAssertTrue(ImageFormat.pdf.isDecodingSupported)
        XCTAssertFalse(ImageFormat.pdf.isCodecSupported)
    }

    func testTheCropBoxIsWhatIsDrawnAtSeventyTwoDPI() throws {
        let data = try fixture("cropbox.pdf")
        XCTAssertEqual(PDFCoder.pageCount(data), 6)
        // pdfinfo -box: CropBoxes 800×100, 300×200 (MediaBox 300×860), 200×300 (860×300),
        // 800×200 (1000×1000), 595×841, 578×803 (578×1224, offset 421).
        let sizes = [(800, 100), (300, 200), (200, 300), (800, 200), (595, 841), (578, 803)]
        for (index, size) in sizes.enumerated() {
            let image = try decode(data, page: index)
            XCTAssertEqual(image.format, .pdf)
            XCTAssertEqual(image.bitmap.size, PixelSize(width: size.0, height: size.1), "page \(index + 1)")
            let reference = try ImageCodersManager.shared.decode(try fixture("cropbox-page\(index + 1).pdftoppm.png"))
            XCTAssertEqual(reference.bitmap.size, image.bitmap.size, "page \(index + 1)")
            let quality = psnr(image.bitmap, reference.bitmap)
            XCTAssertGreaterThan(quality, 35, "page \(index + 1): \(quality) dB")
        }
        // The default is the first page.
        XCTAssertEqual(try decode(data).bitmap.size, PixelSize(width: 800, height: 100))
    }

    func testRotatedPagesOfAnOwnerPasswordFileMatchPdftoppm() throws {
        // Encrypted with an owner password only ("foo"): it opens, as in poppler's tools.
        let data = try fixture("orientation.pdf")
        for index in 0..<4 {
            let image = try decode(data, page: index)
            let expected = index % 2 == 0 ? PixelSize(width: 595, height: 842) : PixelSize(width: 842, height: 595)
            XCTAssertEqual(image.bitmap.size, expected, "page \(index + 1)")
            let reference = try ImageCodersManager.shared.decode(
                try fixture("orientation-page\(index + 1).pdftoppm.png"))
            let quality = psnr(image.bitmap, reference.bitmap)
            XCTAssertGreaterThan(quality, 35, "page \(index + 1): \(quality) dB")
            XCTAssertTrue(image.bitmap.isOpaque)
        }
    }

    func testAUserPasswordIsATypedError() throws {
        for name in ["PasswordEncrypted.pdf", "encrypted-256.pdf"] {
            assertFails(try fixture(name), .encrypted)
            XCTAssertNil(PDFCoder.pageCount(try fixture(name)), name)
        }
    }

    func testTruncatedAndDamagedFilesAreTypedErrors() throws {
        let data = try fixture("orientation.pdf")
        for cut in [10, 100, data.count / 2, data.count - 10] {
            assertFails(data.prefix(cut), .truncatedData)
        }
        var garbage = Data("%PDF-1.4\n".utf8)
        garbage.append(Data((0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }))
        garbage.append(Data("\n%%EOF\n".utf8))
        assertFails(garbage, .badImageData)
        assertFails(Data("%PDF-1.7\n%%EOF\n".utf8), .badImageData)
    }

    func testPagesBeyondTheDocumentAndPagesOfDifferentSizes() throws {
        let data = try fixture("orientation.pdf")
        var options = ImageDecodingOptions.default
        options.pages = .page(4)
        assertFails(data, .invalidArgument, options: options)
        options.pages = .all
        assertFails(data, .unsupportedFormat, options: options)
        let sameSize = Self.document(pages: [(612, 792), (612, 792), (612, 792)])
        let all = try ImageCodersManager.shared.decode(sameSize, options: options)
        XCTAssertEqual(all.frames.count, 3)
        XCTAssertEqual(all.bitmap.size, PixelSize(width: 612, height: 792))
    }

    func testThumbnailsAreDrawnAtTheTargetAndLimitsApplyToThePixelsDrawn() throws {
        // 200 × 200 inches, PDF's largest page: 14400 × 14400 px at 72 dpi, over the default limits.
        let huge = Self.document(pages: [(14400, 14400)])
        assertFails(huge, .decompressionBomb)
        var options = ImageDecodingOptions.default
        options.thumbnailPixelSize = PixelSize(256)
        PixelMemory.resetPeak()
        let before = PixelMemory.peakBytes
        let thumbnail = try ImageCodersManager.shared.decode(huge, options: options)
        XCTAssertEqual(thumbnail.bitmap.size, PixelSize(width: 256, height: 256))
        let drawn = PixelMemory.peakBytes - before
        XCTAssertLessThan(drawn, 2 * 256 * 256 * 4, "pixels drawn at the target size")
        // A page drawn smaller keeps its content: the rotated page's text, at half size.
        options.thumbnailPixelSize = PixelSize(421)
        let half = try decode(try fixture("orientation.pdf"), page: 1, options: options)
        XCTAssertEqual(half.bitmap.size, PixelSize(width: 421, height: 298))
        let full = try decode(try fixture("orientation.pdf"), page: 1)
        XCTAssertGreaterThan(psnr(half.bitmap, try full.bitmap.resized(to: half.bitmap.size)), 25)
    }

    /// A 200 × 150 pt page asked as a 256 thumbnail is drawn at 256 × 192 (a page has no pixel
    /// size to protect); a larger thumbnail than the page is not an upscaled raster.
    func testAPageSmallerThanTheThumbnailIsDrawnAtTheThumbnailSize() throws {
        var options = ImageDecodingOptions.default
        options.thumbnailPixelSize = PixelSize(256)
        let small = try ImageCodersManager.shared.decode(Self.document(pages: [(200, 150)]), options: options)
        XCTAssertEqual(small.bitmap.size, PixelSize(width: 256, height: 192))
        XCTAssertEqual(
            try ImageCodersManager.shared.decode(Self.document(pages: [(200, 150)])).bitmap.size,
            PixelSize(width: 200, height: 150))
        options.thumbnailPixelSize = PixelSize(100)
        let smaller = try ImageCodersManager.shared.decode(Self.document(pages: [(200, 150)]), options: options)
        XCTAssertEqual(smaller.bitmap.size, PixelSize(width: 100, height: 75))
    }

    func testAPageIsWhitePaperWhereNothingIsDrawn() throws {
        let image = try ImageCodersManager.shared.decode(Self.document(pages: [(10, 10)]))
        XCTAssertTrue(image.bitmap[5, 5] == (255, 255, 255, 255))
    }

    /// A PDF of empty pages of the given sizes in points, with a correct cross-reference table.
    static func document(pages: [(Int, Int)]) -> Data {
        var objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
        let kids = (0..<pages.count).map { "\($0 + 3) 0 R" }.joined(separator: " ")
        objects.append("<< /Type /Pages /Kids [\(kids)] /Count \(pages.count) >>")
        for (width, height) in pages {
            objects.append("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(width) \(height)] >>")
        }
        var text = "%PDF-1.4\n"
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(text.utf8.count)
            text += "\(index + 1) 0 obj\n\(object)\nendobj\n"
        }
        let xref = text.utf8.count
        text += "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets { text += String(format: "%010d 00000 n \n", offset) }
        text += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        return Data(text.utf8)
    }
}
#endif
