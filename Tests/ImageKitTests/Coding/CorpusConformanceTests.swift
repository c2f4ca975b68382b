import Foundation
import XCTest

@testable import ImageKit

/// Every file of `../shared/corpus/MANIFEST.tsv` against ImageKit's decoders.
final class CorpusConformanceTests: XCTestCase {
    /// Valid files ImageKit refuses on purpose, with the reason. Each must fail with a typed error.
    static func expectedFailure(_ entry: Corpus.Entry) -> String? {
        let path = entry.path
        if entry.format == "JPEG" {
            if path.contains("x12_") || path.contains("x16_") || path.contains("x32x2_")
                || path.hasSuffix("monkey12.jpg")
            {
                return "libturbojpeg 2.1 decodes 8-bit JPEG only"
            }
            if path.contains("/lossless_") || path.contains("/ls/") {
                return "lossless JPEG and JPEG-LS are not in libturbojpeg 2.1"
            }
            if path.contains("_dnl") { return "libjpeg does not support DNL markers" }
        }
        switch path {
        case "gif/pygif/image-zero-width.gif", "gif/pygif/image-zero-height.gif", "gif/pygif/image-zero-size.gif":
            return "an empty image with no LZW data at all: giflib stops at the missing code size (Pillow fails too)"
        case "gif/pygif/no-data.gif":
            return "no image descriptor at all: there is no frame to show (Pillow fails too)"
        default:
            return nil
        }
    }

    /// Files whose frame 0 differs from the reference on purpose, with the reason.
    static let knownPixelDifferences: [String: String] = [
        "gif/pygif/image-inside-bg.gif":
            "frame 0 covers part of the screen: ImageKit (like browsers) leaves the rest transparent, Pillow paints palette index 0",
        "gif/pygif/missing-pixels.gif": "as image-inside-bg: uncovered screen pixels are transparent in ImageKit",
        "gif/pygif/high-color.gif": "as image-inside-bg: frame 0 is one tile of four",
        "gif/pygif/images-combine.gif": "as image-inside-bg: frame 0 is one tile of four",
        "gif/pygif/dispose-restore-background.gif": "as image-inside-bg: frame 0 covers one pixel",
        "webp/libwebp-test-data/bad_palette_index.webp":
            "libwebp 1.2.4 (Debian 12) maps an out-of-range palette index differently from the newer libwebp the reference used",
    ]

    func testValidFilesDecodeWithManifestSizeFramesAndPixels() throws {
        let entries = try Corpus.requireEntries().filter {
            $0.isValid && ["JPEG", "PNG", "GIF", "WEBP"].contains($0.format)
        }
        XCTAssertGreaterThan(entries.count, Corpus.minimum(700))
        var options = ImageDecodingOptions(appliesOrientation: false)
        // The manifest's reference decoder does not colour-manage: compare the stored pixels of
        // the few profile-tagged files (the formats-corpus tests check the conversion).
        options.keepsColorProfile = true
        var checkedHashes = 0
        for entry in entries {
            let data = try entry.data
            let reason = Self.expectedFailure(entry)
            let image: DecodedImage
            do {
                image = try ImageCodersManager.shared.decode(data, options: options)
            } catch {
                XCTAssertNotNil(reason, "\(entry.path): \(error)")
                if entry.format == "JPEG" { XCTAssertEqual(error.code, .unsupportedFormat, entry.path) }
                continue
            }
            XCTAssertNil(reason, "\(entry.path) decoded although it is listed as refused: \(reason ?? "")")
            if let width = entry.width, let height = entry.height {
                XCTAssertEqual(image.width, width, "\(entry.path) width")
                XCTAssertEqual(image.height, height, "\(entry.path) height")
            }
            if let frames = entry.frames { XCTAssertEqual(image.frames.count, frames, "\(entry.path) frames") }
            XCTAssertEqual(image.cost, image.frames.reduce(0) { $0 + $1.bitmap.bytesPerRow * $1.bitmap.height })
            guard let reference = entry.referenceSHA256 else { continue }
            let digest = image.frames[0].bitmap.canonicalSHA256()
            if let why = Self.knownPixelDifferences[entry.path] {
                XCTAssertNotEqual(
                    digest, reference, "\(entry.path) now matches; remove it from knownPixelDifferences (\(why))")
            } else {
                XCTAssertEqual(digest, reference, "\(entry.path) frame 0 pixels")
                checkedHashes += 1
            }
        }
        XCTAssertGreaterThan(checkedHashes, Corpus.minimum(650))
    }

    func testInvalidFilesGiveTypedErrors() throws {
        let entries = try Corpus.requireEntries().filter { !$0.isValid }
        XCTAssertGreaterThan(entries.count, Corpus.minimum(50))
        for entry in entries {
            let data = try entry.data
            do {
                let image = try ImageCodersManager.shared.decode(data)
                XCTFail("\(entry.path) decoded to \(image.width)×\(image.height) but is invalid")
            } catch {
                XCTAssertFalse(error.message.isEmpty, entry.path)
            }
        }
    }

    func testHostileFilesAreRefusedBeforeAllocating() throws {
        for path in ["invalid/pillow/decompression_bomb.gif", "invalid/pillow/decompression_bomb_extents.gif"] {
            XCTAssertThrowsError(try ImageCodersManager.shared.decode(Corpus.data(path)), path) { error in
                XCTAssertEqual((error as? ImageError)?.code, .decompressionBomb, path)
            }
        }
        // The zTXt bomb is a valid 1×1 image: its text chunk is skipped, not inflated.
        let image = try ImageCodersManager.shared.decode(Corpus.data("png/pillow/png_decompression_dos.png"))
        XCTAssertEqual(image.width, 1)
    }

    func testAnimationsReportDurationsAndLoopCounts() throws {
        let loop = try ImageCodersManager.shared.decode(Corpus.data("gif/gif-test-suite/animated_loop.gif"))
        XCTAssertEqual(loop.frames.count, 4)
        XCTAssertEqual(loop.loopCount, 0, "NETSCAPE2.0 count 0 plays forever")
        XCTAssertEqual(loop.frames.map(\.duration), [1, 1, 1, 1])

        let noLoop = try ImageCodersManager.shared.decode(Corpus.data("gif/gif-test-suite/animated_noloop.gif"))
        XCTAssertEqual(noLoop.loopCount, 1, "no NETSCAPE2.0 extension: plays once")

        let variable = try ImageCodersManager.shared.decode(
            Corpus.data("gif/gif-test-suite/animated_loop_variable_delay.gif"))
        XCTAssertTrue(variable.frames.allSatisfy { $0.duration >= 0.1 }, "delays of 10 ms or less become 100 ms")

        let apng = try ImageCodersManager.shared.decode(Corpus.data("png/pillow/apng/delay.png"))
        XCTAssertEqual(apng.frames.map(\.duration), [0.5, 1, 0.5, 1])
        XCTAssertEqual(apng.loopCount, 0)

        let webp = try ImageCodersManager.shared.decode(Corpus.data("webp/pillow/iss634.webp"))
        XCTAssertEqual(webp.frames.count, 42)
        XCTAssertEqual(webp.loopCount, 0)
        XCTAssertGreaterThan(webp.totalDuration, 2)
    }

    func testFirstFrameOnlyGivesAStillImage() throws {
        let options = ImageDecodingOptions(firstFrameOnly: true)
        for path in [
            "gif/gif-test-suite/animated_loop.gif", "webp/pillow/iss634.webp", "png/pillow/apng/dispose_op_none.png",
        ] {
            let full = try ImageCodersManager.shared.decode(Corpus.data(path))
            let first = try ImageCodersManager.shared.decode(Corpus.data(path), options: options)
            XCTAssertEqual(first.frames.count, 1, path)
            XCTAssertFalse(first.isAnimated, path)
            XCTAssertEqual(first.bitmap.canonicalSHA256(), full.bitmap.canonicalSHA256(), path)
            XCTAssertEqual(first.cost, full.cost / full.frames.count, path)
        }
    }

    func testAPNGWithHiddenDefaultImage() throws {
        guard let entry = Corpus.entries.first(where: { $0.features.contains("apng_default_hidden") }) else {
            return XCTFail("the corpus has no APNG with a hidden default image")
        }
        let animation = try ImageCodersManager.shared.decode(entry.data)
        XCTAssertEqual(animation.frames.count, entry.frames)
        XCTAssertEqual(
            animation.bitmap.canonicalSHA256(), entry.referenceSHA256, "frame 0 is the first animation frame")
        let still = try ImageCodersManager.shared.decode(
            entry.data, options: ImageDecodingOptions(firstFrameOnly: true))
        XCTAssertEqual(still.frames.count, 1)
        XCTAssertNotEqual(
            still.bitmap.canonicalSHA256(), entry.referenceSHA256, "a still decode shows the default image")
    }
}
