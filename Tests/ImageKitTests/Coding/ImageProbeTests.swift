import Foundation
import XCTest

@testable import ImageKit

/// `ImageProbe` against the decoders: a service plans its decode from the probe, so the size it
/// reads from a header must be the size a decode returns, with and without the orientation.
final class ImageProbeTests: XCTestCase {
    /// Every valid file of both corpora that a probe reads: the probe's displayed size is the
    /// decoded size with the orientation applied, its stored size the decoded size without.
    func testProbedSizesAreTheDecodedSizes() throws {
        var files: [(path: String, data: Data)] = []
        for entry in try Corpus.requireEntries() where entry.isValid {
            files.append((entry.path, try entry.data))
        }
        for entry in try FormatsCorpus.requireEntries() where entry.isValid {
            files.append((entry.path, try entry.data))
        }
        var probedByFormat: [ImageFormat: Int] = [:]
        for (path, data) in files {
            guard let probe = ImageProbe(data) else { continue }
            var oriented = ImageDecodingOptions(appliesOrientation: true)
            oriented.firstFrameOnly = true
            guard let decoded = try? ImageCodersManager.shared.decode(data, options: oriented) else { continue }
            probedByFormat[probe.format, default: 0] += 1
            XCTAssertEqual(
                [decoded.width, decoded.height], [probe.displayedWidth, probe.displayedHeight],
                "\(path): probed \(probe)")
            var stored = oriented
            stored.appliesOrientation = false
            if let decoded = try? ImageCodersManager.shared.decode(data, options: stored) {
                XCTAssertEqual([decoded.width, decoded.height], [probe.width, probe.height], "\(path) as stored")
            }
        }
        // Not vacuous: the formats the probe learned to read are there and read.
        XCTAssertGreaterThan(probedByFormat[.tiff, default: 0], 3, "\(probedByFormat)")
        #if HEIF
        XCTAssertGreaterThan(
            probedByFormat[.heic, default: 0] + probedByFormat[.heif, default: 0], 3, "\(probedByFormat)")
        #endif
        #if AVIF || HEIF
        XCTAssertGreaterThan(probedByFormat[.avif, default: 0], 3, "\(probedByFormat)")
        #endif
        #if JXL
        XCTAssertGreaterThan(probedByFormat[.jpegXL, default: 0], 3, "\(probedByFormat)")
        #endif
    }

    /// Each of the new readers on a file written here with a known size.
    func testModernFormatsReportTheirDisplayedSize() throws {
        let image = TestImages.still(TestImages.gradient(width: 64, height: 40))
        for format in TestImages.modernEncodableFormats {
            let data = try ImageCodersManager.shared.encode(image, as: format, options: ImageEncodingOptions())
            let probe = try XCTUnwrap(ImageProbe(data), "\(format)")
            XCTAssertEqual([probe.width, probe.height, probe.orientation.rawValue], [64, 40, 1], "\(format)")
        }
    }

    /// Headers cut short or bent are nil (decode to learn more), never a crash.
    func testTruncatedAndGarbageHeadersAreNil() throws {
        for entry in try FormatsCorpus.requireEntries() where entry.isValid {
            let data = try entry.data
            for length in [0, 1, 8, 12, 16, 32, 64, 100, min(data.count, 300)] where length < data.count {
                if let probe = ImageProbe(data.prefix(length)) {
                    XCTAssertGreaterThan(probe.width * probe.height, 0, entry.path)
                }
            }
            var bent = data
            for index in stride(from: 8, to: min(bent.count, 400), by: 7) { bent[index] ^= 0x5A }
            _ = ImageProbe(bent)
        }
    }
}
