import CImageCodecs
import Foundation
import XCTest

@testable import ImageKit

/// Inputs `make fuzz` found (named by their fuzz target), run through the same entry points:
/// each must end in a value or a typed error. Under `make test-asan`, a leak or an overflow in
/// any of them fails the run as it failed the fuzzer.
final class FuzzRegressionTests: XCTestCase {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "FuzzRegressions")

    func testEveryFinding() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).sorted()
        XCTAssertFalse(names.isEmpty)
        for name in names {
            let data = try Data(contentsOf: Self.directory.appendingPathComponent(name))
            switch name.split(separator: "-").first {
            case "FuzzPNGFast":
                // The fast path takes only what libpng decodes, with libpng's pixels.
                let fast = try? data.withImageBytes { bytes throws(ImageError) in
                    try PNGCoder.decodeStillFast(bytes, limits: .default, checksCRC: false)
                }
                if let fast = fast ?? nil {
                    do {
                        let reference = try data.withImageBytes { bytes throws(ImageError) in
                            try PNGCoder.decodeStillWithLibpng(bytes, limits: .default, ignoreCRC: true)
                        }
                        XCTAssertTrue(samePixels(fast, reference), name)
                    } catch {
                        // zlib rejects some malformed deflate streams that libdeflate decodes.
                        XCTAssertTrue(error.message.contains("IDAT: invalid"), "\(name): \(error)")
                    }
                }
            case "FuzzGIFBlocks":
                // Fuzz/Sources/FuzzGIFBlocks: six parameter bytes, then the data.
                let parameters = Array(data.prefix(6)) + [UInt8](repeating: 0, count: max(0, 6 - data.count))
                let width = Int(parameters[0]) + 1, height = Int(parameters[1]) + 1
                let bytes = [UInt8](data.dropFirst(6))
                let descriptor =
                    bytes.firstIndex(of: 0x2C).map { start in
                        bytes.withUnsafeBytes { GIFStructure.imageDataOffset($0, descriptorAt: start + 1) }
                    } ?? 0
                var indices = [UInt8](repeating: 0, count: width * height + Int(IK_GIF_LZW_SLACK))
                var decoded = 0, end = 0
                for strict: Int32 in [0, 1] {
                    _ = ik_gif_lzw_decode(
                        bytes + [0], bytes.count, descriptor, strict, &indices, width * height, &decoded, &end)
                    XCTAssertLessThanOrEqual(decoded, width * height, name)
                    XCTAssertLessThanOrEqual(end, bytes.count, name)
                }
            case "FuzzDiskMetadata":
                _ = DiskCacheMetadata.decode(Array(data), lastAccessDate: nil)
                XCTAssertNil(HTTPDate.parse(String(decoding: data, as: UTF8.self)), name)
            default:
                for options in [
                    ImageDecodingOptions(), ImageDecodingOptions(thumbnailPixelSize: PixelSize(64)),
                    ImageDecodingOptions(firstFrameOnly: true, allowsPartialImages: true),
                ] {
                    _ = try? ImageCodersManager.shared.decode(data, options: options)
                    _ = try? ImageCodersManager.shared.decode(data.dropFirst(), options: options)
                }
            }
        }
    }

    /// libheif 1.15 leaks the profile it allocates for an `nclx` box with an unknown code, so such
    /// a file is read as SDR without asking it; a file with known codes is still asked.
    func testNCLXWithUnknownCodesIsNotAskedOfLibheif() throws {
        let finding = try Data(
            contentsOf: Self.directory.appendingPathComponent("FuzzModernFormats-nclx-unknown-primaries")
        ).dropFirst()
        XCTAssertFalse(finding.withUnsafeBytes { BMFFBoxes.nclxCodesAreKnown($0) })
        var known = Data(finding)
        guard let at = known.firstRange(of: Data("colrnclx".utf8))?.upperBound else {
            return XCTFail("the finding has no nclx box")
        }
        known.replaceSubrange(at..<at + 6, with: [0, 9, 0, 16, 0, 9])  // BT.2020, PQ, BT.2020 NCL
        XCTAssertTrue(known.withUnsafeBytes { BMFFBoxes.nclxCodesAreKnown($0) })
    }
}
