import Foundation
import XCTest

@testable import ImageKit

/// Cutting files short must give a typed error or a correct image, never a crash or a hang.
final class TruncationTests: XCTestCase {
    static let files = [
        "jpeg/pillow/hopper.jpg", "jpeg/pillow/flower.jpg", "jpeg/pillow/pil_sample_cmyk.jpg",
        "jpeg/jpegsuite/progressive_huffman/32x32x8_ycbcr.jpg", "png/pngsuite/basn6a08.png",
        "png/pngsuite/basi3p08.png",
        "png/pillow/apng/dispose_op_previous.png", "gif/gif-test-suite/animated_loop_interlaced.gif",
        "gif/giflib/treescap-interlaced.gif", "webp/pillow/hopper.webp", "webp/pillow/iss634.webp",
        "webp/libwebp-test-data/lossless_vec_1_0.webp",
    ]

    func testEveryThirtySecondOfADozenFiles() throws {
        for path in Self.files {
            let data = try Corpus.data(path)
            let full = try ImageCodersManager.shared.decode(data)
            for step in 0..<32 {
                let cut = data.count * step / 32
                do {
                    let image = try ImageCodersManager.shared.decode(data.prefix(cut))
                    // Some formats end with metadata the decoder does not need.
                    XCTAssertEqual(image.width, full.width, "\(path) cut at \(cut)")
                    XCTAssertEqual(image.height, full.height, "\(path) cut at \(cut)")
                    XCTAssertFalse(image.isPartial, "partial images need allowsPartialImages")
                } catch {
                    XCTAssertFalse(error.message.isEmpty)
                }
            }
        }
    }

    func testTruncatedJPEGIsAnErrorUnlessPartialImagesAreAllowed() throws {
        let data = try Corpus.data("invalid/truncated/Landscape_1_half.jpg")
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(data)) { error in
            XCTAssertEqual((error as? ImageError)?.code, .truncatedData)
        }
        let partial = try ImageCodersManager.shared.decode(
            data, options: ImageDecodingOptions(allowsPartialImages: true))
        XCTAssertTrue(partial.isPartial)
        XCTAssertEqual(partial.width, 1800)
        XCTAssertEqual(partial.height, 1200)
    }

    func testEmptyAndTinyInputs() {
        for bytes: [UInt8] in [
            [], [0xFF], [0xFF, 0xD8], [0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47], [0x47, 0x49, 0x46],
            Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBP".utf8),
        ] {
            XCTAssertThrowsError(try ImageCodersManager.shared.decode(Data(bytes)), "\(bytes)") { error in
                XCTAssertNotNil(error as? ImageError)
            }
        }
    }
}
