import Foundation
import XCTest

@testable import ImageKit

final class ProgressiveDecodingTests: XCTestCase {
    /// Feeds `data` in `chunks` pieces; returns the previews and the final image.
    func feed(_ data: Data, chunks: Int, options: ImageDecodingOptions = .default) -> (
        previews: [DecodedImage], final: Result<DecodedImage, ImageError>
    ) {
        let decoder = ProgressiveDecoder(options: options)
        var previews: [DecodedImage] = []
        let step = max(1, data.count / chunks)
        var end = 0
        while end < data.count {
            end = min(data.count, end + step)
            decoder.update(data.prefix(end), isFinal: end == data.count)
            if let preview = decoder.preview() { previews.append(preview) }
        }
        if data.isEmpty { decoder.update(data, isFinal: true) }
        return (previews, Result { () throws(ImageError) in try decoder.finalImage() })
    }

    func testEveryCorpusFileInSeveralChunkings() throws {
        var previewCount = 0
        for entry in try Corpus.requireEntries() {
            let data = try entry.data
            let oneShot = Result { () throws(ImageError) in try ImageCodersManager.shared.decode(data) }
            for chunks in data.count > 200_000 ? [5] : [3, 16] {
                let (previews, final) = feed(data, chunks: chunks)
                switch (oneShot, final) {
                case (.success(let expected), .success(let image)):
                    XCTAssertEqual(image.bitmap.canonicalSHA256(), expected.bitmap.canonicalSHA256(), entry.path)
                    XCTAssertEqual(image.frames.count, expected.frames.count, entry.path)
                    XCTAssertFalse(image.isPreview)
                    for preview in previews {
                        XCTAssertTrue(preview.isPreview, entry.path)
                        XCTAssertLessThanOrEqual(preview.width * preview.height, image.width * image.height, entry.path)
                        XCTAssertLessThanOrEqual(preview.frames.count, image.frames.count, entry.path)
                    }
                case (.failure(let expected), .failure(let error)):
                    XCTAssertEqual(error.code, expected.code, entry.path)
                default:
                    XCTFail("\(entry.path): progressive final \(final) differs from one-shot \(oneShot)")
                }
                previewCount += previews.count
            }
        }
        XCTAssertGreaterThan(previewCount, Corpus.minimum(300), "previews are produced")
    }

    func testProgressiveJPEGGivesOnePreviewPerScan() throws {
        let data = try Corpus.data("jpeg/sdwebimage/TestImageLarge.jpg")
        let options = ImageDecodingOptions(thumbnailPixelSize: PixelSize(300))
        let (previews, final) = feed(data, chunks: 24, options: options)
        let image = try final.get()
        XCTAssertGreaterThanOrEqual(previews.count, 3, "several scans complete along the way")
        XCTAssertTrue(
            previews.allSatisfy { $0.width == image.width && $0.height == image.height },
            "previews use the DCT-scaled thumbnail path: same size as the final")
        XCTAssertLessThanOrEqual(image.width, 300)
    }

    /// A progressive JPEG's first preview (up to 1/4 scale) comes from its first DC scans
    /// alone; a thumbnail that the 1/8 DC picture covers 1.5 times over gets no further previews (the first is final).
    func testFirstPreviewOfAProgressiveJPEGComesFromItsDCScans() throws {
        let original = try ImageCodersManager.shared.decode(
            Corpus.data("jpeg/exif-orientation-examples/Landscape_1.jpg"))
        let data = try ImageCodersManager.shared.encode(
            original, as: .jpeg, options: .init(quality: 0.85, progressive: true))
        guard
            case .ready(byteCount: let dcEnd) = JPEGCoder.firstScans(
                data, options: .init(thumbnailPixelSize: PixelSize(64)))
        else {
            return XCTFail("the DC scans of a libjpeg progressive file are found")
        }
        let prefix = data.prefix(dcEnd)
        let quarter = PixelSize(width: original.width / 4, height: original.height / 4)
        let decoder = ProgressiveDecoder(options: .init(thumbnailPixelSize: quarter))
        decoder.update(prefix, isFinal: false)
        let preview = try XCTUnwrap(decoder.preview(), "the DC scans make a preview")
        XCTAssertTrue(preview.isPreview)
        XCTAssertEqual(preview.width, quarter.width)
        XCTAssertEqual(preview.height, quarter.height)
        let small = ProgressiveDecoder(
            options: .init(thumbnailPixelSize: PixelSize(width: original.width / 16, height: original.height / 16)))
        small.update(prefix, isFinal: false)
        XCTAssertNotNil(small.preview())
        small.update(data.prefix(data.count * 3 / 4), isFinal: false)
        XCTAssertNil(small.preview(), "a thumbnail the DC picture covers 1.5 times over: its DC preview is final")
        // At 1/8 the DC picture is the image (a first scan at 8 % of the bytes).
        let eighth = PixelSize(width: original.width / 8, height: original.height / 8)
        XCTAssertGreaterThan(psnr(try preview.bitmap.resized(to: eighth), try original.bitmap.resized(to: eighth)), 30)
        // Later previews are TurboJPEG's, and the final is the one-shot decode.
        decoder.update(data.prefix(data.count * 3 / 4), isFinal: false)
        XCTAssertNotNil(decoder.preview(), "a 1/4-scale preview improves with the AC scans")
        decoder.update(data, isFinal: true)
        XCTAssertEqual(
            try decoder.finalImage().bitmap.canonicalSHA256(),
            try ImageCodersManager.shared.decode(data, options: .init(thumbnailPixelSize: quarter)).bitmap
                .canonicalSHA256())
    }

    func testInterlacedPNGGivesAPreviewPerPass() throws {
        let data = try Corpus.data("png/pngsuite/basi2c08.png")
        let (previews, final) = feed(data, chunks: 40)
        XCTAssertGreaterThanOrEqual(previews.count, 3)
        XCTAssertEqual(try final.get().width, 32)
        // The first pass alone already covers the whole picture (8×8 blocks).
        XCTAssertEqual(previews.first?.bitmap[31, 31].a, 255)
    }

    func testGIFFramesAppearAsTheyComplete() throws {
        let data = try Corpus.data("gif/gif-test-suite/animated_loop.gif")
        let (previews, final) = feed(data, chunks: 50)
        XCTAssertEqual(try final.get().frames.count, 4)
        XCTAssertEqual(previews.map(\.frames.count), Array(1...previews.count), "one more frame each time")
    }

    func testWebPRowsArrive() throws {
        let data = try Corpus.data("webp/pillow/flower.webp")
        let (previews, final) = feed(data, chunks: 10)
        XCTAssertGreaterThanOrEqual(previews.count, 2)
        XCTAssertEqual(try final.get().width, 480)
    }

    #if JXL
    /// JPEG XL: libjxl's progressive steps (the 1/8 DC image, then passes) become previews before
    /// the last byte, at the final size; the final image is the one-shot decode.
    func testJPEGXLPreviewsAppearBeforeTheLastByte() throws {
        // Lossy (VarDCT) files code their DC first and their groups one by one: previews come
        // early. Small modular files code everything in one section (the whole file is needed).
        for (path, previewsExpected) in [
            ("jxl/made/lossy-d1.jxl", true), ("jxl/conformance/alpha_triangles.jxl", false),
            ("jxl/conformance/grayscale.jxl", false),
        ] {
            let data = try FormatsCorpus.entry(path).data
            let (previews, final) = feed(data, chunks: 12)
            let image = try final.get()
            XCTAssertEqual(
                image.bitmap.canonicalSHA256(), try ImageCodersManager.shared.decode(data).bitmap.canonicalSHA256(),
                path)
            if previewsExpected {
                XCTAssertGreaterThanOrEqual(previews.count, 1, "\(path): a preview before the last byte")
            }
            for preview in previews {
                XCTAssertTrue(preview.isPreview)
                XCTAssertEqual(preview.bitmap.size, image.bitmap.size, path)
            }
            // The last preview is already close to the final picture.
            if let last = previews.last { XCTAssertGreaterThan(clearedPSNR(last.bitmap, image.bitmap), 20, path) }
            // Thumbnail options apply to previews too.
            let (small, _) = feed(data, chunks: 12, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(64)))
            XCTAssertTrue(small.allSatisfy { max($0.width, $0.height) <= 64 }, path)
        }
        // Every prefix of a JPEG XL file: a preview or nothing, never a trap.
        let data = try FormatsCorpus.entry("jxl/made/lossless-alpha.jxl").data
        let decoder = ProgressiveDecoder()
        for end in stride(from: 0, through: data.count, by: max(1, data.count / 97)) {
            decoder.update(data.prefix(end), isFinal: false)
            _ = decoder.preview()
        }
        decoder.update(data, isFinal: true)
        XCTAssertNoThrow(try decoder.finalImage())
    }
    #endif

    func testTruncationAtEveryOffsetNeverTraps() throws {
        for path in [
            "png/pngsuite/basi0g01.png", "gif/gif-test-suite/static_transparent.gif",
            "jpeg/jpegsuite/baseline/32x32x8_ycbcr.jpg",
            "webp/libwebp-test-data/lossless_vec_1_0.webp",
        ] {
            let data = try Corpus.data(path)
            let decoder = ProgressiveDecoder()
            for end in 0...data.count {
                let prefix = data.prefix(end)
                _ = try? ImageCodersManager.shared.decode(prefix)
                decoder.update(prefix, isFinal: false)
                _ = decoder.preview()
            }
            decoder.update(data, isFinal: true)
            XCTAssertNoThrow(try decoder.finalImage(), path)
        }
    }
}
