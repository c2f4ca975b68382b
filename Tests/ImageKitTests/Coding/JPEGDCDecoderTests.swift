import CImageCodecs
import Foundation
import XCTest

@testable import ImageKit

/// The DC-only 1/8-scale decoder against TurboJPEG's 1/8 decode of the same files.
final class JPEGDCDecoderTests: XCTestCase {
    func testMatchesTurboJPEGOnEveryCorpusJPEGItTakes() throws {
        var taken = 0, declined = 0, progressiveTaken = 0
        var lowest = Double.infinity
        for entry in try Corpus.requireEntries() where entry.format == "JPEG" {
            let data = try entry.data
            guard let dc = JPEGCoder.eighthScale(data, dcOnly: true) else {
                declined += 1
                continue
            }
            taken += 1
            let isProgressive = data.withUnsafeBytes { JPEGMarkers($0).isProgressive }
            if isProgressive { progressiveTaken += 1 }
            guard let reference = JPEGCoder.eighthScale(data, dcOnly: false) else {
                XCTFail("\(entry.path): the DC decoder took a file TurboJPEG cannot decode cleanly")
                continue
            }
            XCTAssertEqual(dc.width, reference.width, entry.path)
            XCTAssertEqual(dc.height, reference.height, entry.path)
            guard dc.width == reference.width, dc.height == reference.height else { continue }
            // Luminance is libjpeg's 1x1 IDCT exactly. Subsampled chroma is the block DC where
            // libjpeg uses a 2x2 IDCT: the same after the 2x reduction the decoder requires.
            if isGray(reference) {
                XCTAssertEqual(psnr(dc, reference), .infinity, "\(entry.path): grayscale must match exactly")
            }
            guard dc.width >= 2, dc.height >= 2 else { continue }
            let quality = psnr(halved(dc), halved(reference))
            lowest = min(lowest, quality)
            XCTAssertGreaterThan(quality, isProgressive ? 40 : 38, "\(entry.path)")
        }
        print(
            "DC decoder: took \(taken) corpus JPEGs (\(progressiveTaken) progressive), declined \(declined); lowest PSNR vs TurboJPEG \(lowest) dB"
        )
        XCTAssertGreaterThan(progressiveTaken, 0, "progressive JPEGs take the DC-scan path")
        XCTAssertGreaterThan(
            taken, 40, "clean baseline JPEGs of 16 px or more take the fast path (49 at the time of writing)")
    }

    /// Truncated or damaged data never comes back as a clean DC decode: TurboJPEG must see it.
    func testDamagedDataIsLeftToTurboJPEG() throws {
        let entries = try Corpus.requireEntries().filter { $0.format == "JPEG" && $0.isValid }
        var checked = 0
        for entry in entries.prefix(40) {
            let data = try entry.data
            guard JPEGCoder.eighthScale(data, dcOnly: true) != nil else { continue }
            checked += 1
            for step in 1..<16 {
                let cut = data.count * step / 16
                XCTAssertNil(JPEGCoder.eighthScale(data.prefix(cut), dcOnly: true), "\(entry.path) cut at \(cut)")
            }
            var damaged = data
            for index in stride(from: data.count / 2, to: min(data.count - 2, data.count / 2 + 64), by: 1) {
                damaged[index] = 0xFF
            }
            _ = JPEGCoder.eighthScale(damaged, dcOnly: true)  // must not crash or read out of bounds (ASan)
        }
        XCTAssertGreaterThan(checked, Corpus.minimum(10))
        // Public behaviour is unchanged: a truncated file still reports truncatedData.
        let sample = try XCTUnwrap(
            entries.first { JPEGCoder.eighthScale((try? $0.data) ?? Data(), dcOnly: true) != nil })
        let data = try sample.data
        let options = ImageDecodingOptions(
            thumbnailPixelSize: PixelSize(
                width: max(1, (sample.width ?? 8) / 8), height: max(1, (sample.height ?? 8) / 8)))
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(data.prefix(data.count * 3 / 4), options: options)) {
            error in
            XCTAssertEqual((error as? ImageError)?.code, .truncatedData)
        }
    }

    /// Thumbnails through the DC path (baseline and progressive) against TurboJPEG's 1/8 decode
    /// and the same resample: ≥ 40 dB at every reduction the path is used for, on the corpus's
    /// progressive files and on corpus photos re-encoded progressive (4:2:0, libjpeg's default
    /// scan script).
    func testThumbnailsMatchTurboJPEGAtEveryReductionTheyAreUsedFor() throws {
        var sources: [(String, Data)] = []
        for entry in try Corpus.requireEntries() where entry.format == "JPEG" && entry.isValid {
            let data = try entry.data
            if data.withUnsafeBytes({ JPEGMarkers($0).isProgressive }) { sources.append((entry.path, data)) }
        }
        XCTAssertGreaterThanOrEqual(Corpus.photos.count, 3)
        for photo in Corpus.photos.prefix(3) {
            let path = photo.path
            let image = try ImageCodersManager.shared.decode(photo.data)
            sources.append(
                (
                    path + " (progressive)",
                    try ImageCodersManager.shared.encode(
                        image, as: .jpeg, options: .init(quality: 0.85, progressive: true))
                ))
            sources.append(
                (
                    path + " (baseline)",
                    try ImageCodersManager.shared.encode(image, as: .jpeg, options: .init(quality: 0.85))
                ))
        }
        var compared = 0, lowest = Double.infinity
        for (name, data) in sources {
            guard let reference = JPEGCoder.eighthScale(data, dcOnly: false),
                JPEGCoder.eighthScale(data, dcOnly: true) != nil
            else { continue }
            let full = try XCTUnwrap(
                data.withUnsafeBytes { bytes -> PixelSize? in
                    let markers = JPEGMarkers(bytes)
                    return PixelSize(width: markers.frameWidth, height: markers.frameHeight)
                })
            for reduction in [1.0, 1.5, 2.0, 3.1] {
                let box = PixelSize(
                    width: max(1, Int(Double(reference.width) / reduction)),
                    height: max(1, Int(Double(reference.height) / reduction)))
                var options = ImageDecodingOptions(thumbnailPixelSize: box)
                options.appliesOrientation = false
                options.keepsColorProfile = true  // decoder against decoder: the stored colours
                let thumbnail = try ImageCodersManager.shared.decode(data, options: options).frames[0].bitmap
                guard thumbnail.width * 8 < full.width else { continue }  // a larger DCT scale: not this path
                let expected = try reference.resized(
                    to: PixelSize(width: thumbnail.width, height: thumbnail.height),
                    extent: (Double(full.width) / 8, Double(full.height) / 8), reducingGap: 1)
                let quality = psnr(thumbnail, expected)
                lowest = min(lowest, quality)
                compared += 1
                XCTAssertGreaterThan(quality, 40, "\(name) at \(thumbnail.width)x\(thumbnail.height)")
            }
        }
        print("DC thumbnails: \(compared) compared with TurboJPEG 1/8 + resample, lowest \(lowest) dB")
        XCTAssertGreaterThan(compared, Corpus.minimum(40))
    }

    /// A progressive file's DC decoder needs only the data up to its DC scans with
    /// IK_JPEG_DC_PARTIAL, and gives the same picture (within its 2-level bound) as from the
    /// whole file; shorter prefixes are refused.
    func testProgressiveDCScansSufficeWithoutTheRest() throws {
        var checked = 0
        for photo in Corpus.photos.prefix(3) {
            let path = photo.path
            let image = try ImageCodersManager.shared.decode(photo.data)
            let data = try ImageCodersManager.shared.encode(
                image, as: .jpeg, options: .init(quality: 0.85, progressive: true))
            let whole = try XCTUnwrap(JPEGCoder.eighthScale(data, dcOnly: true))
            let end = data.withUnsafeBytes {
                ik_jpeg_dc_scans_end($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count)
            }
            XCTAssertGreaterThan(end, 0, path)
            XCTAssertLessThan(end, data.count / 3, "\(path): libjpeg's script sends the DC first")
            let prefix = data.prefix(end)
            let partial = try XCTUnwrap(JPEGCoder.eighthScale(prefix, dcOnly: true, partial: true), path)
            XCTAssertGreaterThan(psnr(partial, whole), 45, path)
            XCTAssertNil(
                JPEGCoder.eighthScale(prefix, dcOnly: true), "\(path): without the flag the whole file is required")
            XCTAssertNil(
                JPEGCoder.eighthScale(data.prefix(end - 3), dcOnly: true, partial: true), "\(path): one scan short")
            XCTAssertEqual(
                data.prefix(end - 1).withUnsafeBytes {
                    ik_jpeg_dc_scans_end($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count)
                }, 0)
            checked += 1
        }
        XCTAssertEqual(checked, 3)
    }

    /// 2x2 box average (odd edges dropped).
    private func halved(_ bitmap: Bitmap) -> Bitmap {
        let width = bitmap.width / 2, height = bitmap.height / 2
        let buffer = try! PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                let a = bitmap[2 * x, 2 * y], b = bitmap[2 * x + 1, 2 * y], c = bitmap[2 * x, 2 * y + 1],
                    d = bitmap[2 * x + 1, 2 * y + 1]
                row[4 * x] = UInt8((Int(a.r) + Int(b.r) + Int(c.r) + Int(d.r) + 2) / 4)
                row[4 * x + 1] = UInt8((Int(a.g) + Int(b.g) + Int(c.g) + Int(d.g) + 2) / 4)
                row[4 * x + 2] = UInt8((Int(a.b) + Int(b.b) + Int(c.b) + Int(d.b) + 2) / 4)
                row[4 * x + 3] = 255
            }
        }
        return buffer.freeze(isOpaque: true)
    }

    private func isGray(_ bitmap: Bitmap) -> Bool {
        for y in stride(from: 0, to: bitmap.height, by: max(1, bitmap.height / 16)) {
            for x in 0..<bitmap.width {
                let pixel = bitmap[x, y]
                if pixel.r != pixel.g || pixel.r != pixel.b { return false }
            }
        }
        return true
    }
}
