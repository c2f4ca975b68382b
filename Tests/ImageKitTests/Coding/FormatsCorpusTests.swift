import Foundation
import XCTest

@testable import ImageKit

/// Every file of `../shared/formats-corpus/MANIFEST.tsv` (HEIF, AVIF, JPEG XL, TIFF, BMP, ICO
/// and ICC-tagged JPEG/PNG/WebP) against ImageKit's decoders and colour management.
final class FormatsCorpusTests: XCTestCase {
    /// Valid files ImageKit decodes differently on purpose or by a library's limit, with the
    /// reason. They must still decode to the manifest's size and frame count. (None at present.)
    static let knownDifferences: [String: String] = [:]

    /// PSNR a lossy or colour-managed file must reach against its reference: 40 dB, or 1 dB
    /// below what a second decoder or colour engine reaches when that is lower (it shows how far
    /// two correct implementations land apart on this file).
    static func bound(_ entry: FormatsCorpus.Entry) -> Double {
        let alternates = entry.alternatePSNR.values.filter { $0 < 99 }
        return min(40, (alternates.min() ?? 99) - 1)
    }

    /// Whether this build decodes the format at `path` (HEIF, AVIF and JPEG XL are traits).
    static func isBuiltIn(_ path: String) -> Bool {
        guard let data = try? FormatsCorpus.entry(path).data else { return true }
        return ImageSignature(data).format.isDecodingSupported
    }

    /// The paths this build decodes; the others must answer `unsupportedFormat`.
    static func builtIn(_ paths: [String]) -> [String] {
        for path in paths where !isBuiltIn(path) {
            XCTAssertThrowsError(try ImageCodersManager.shared.decode(FormatsCorpus.entry(path).data), path) {
                XCTAssertEqual(($0 as? ImageError)?.code, .unsupportedFormat, path)
            }
        }
        return paths.filter(isBuiltIn)
    }

    /// Every trait on: the default build, and `make test`'s.
    static var allFormatsBuiltIn: Bool {
        [ImageFormat.heic, .avif, .jpegXL].allSatisfy(\.isDecodingSupported)
    }

    func testEveryValidFileDecodesAsItsManifestSays() throws {
        let entries = try FormatsCorpus.requireEntries().filter(\.isValid)
        XCTAssertGreaterThan(entries.count, FormatsCorpus.minimum(100))
        var exact = 0, close = 0, colour = 0
        for entry in entries {
            guard Self.isBuiltIn(entry.path) else {
                _ = Self.builtIn([entry.path])
                continue
            }
            let image: DecodedImage
            do { image = try ImageCodersManager.shared.decode(entry.data) } catch {
                XCTFail("\(entry.path): \(error)")
                continue
            }
            XCTAssertEqual(image.width, entry.width, entry.path)
            XCTAssertEqual(image.height, entry.height, entry.path)
            XCTAssertTrue(
                image.frameCount == entry.frames || entry.also.contains("frames=\(image.frameCount)"),
                "\(entry.path): \(image.frameCount) frames, manifest \(entry.frames ?? -1)")
            if Self.knownDifferences[entry.path] != nil || entry.compare == "none" { continue }
            let reference = try FormatsCorpus.reference(entry.referenceURL)
            switch entry.compare {
            case "exact":
                let digest = image.bitmap.canonicalSHA256()
                XCTAssertTrue(
                    digest == entry.referenceSHA256 || digest == entry.alternateSHA256,
                    "\(entry.path): pixels differ from the lossless reference (\(clearedPSNR(image.bitmap, reference)) dB)"
                )
                exact += 1
            case "psnr":
                let psnr = clearedPSNR(image.bitmap, reference)
                XCTAssertGreaterThanOrEqual(psnr, Self.bound(entry), entry.path)
                close += 1
            case "icc":
                let psnr = clearedPSNR(image.bitmap, reference)
                XCTAssertGreaterThanOrEqual(psnr, Self.bound(entry), entry.path)
                XCTAssertNotNil(image.sourceColorProfile, "\(entry.path): the profile was not found")
                if let effect = entry.iccEffectDB, effect < 45 {
                    let raw = try FormatsCorpus.reference(entry.rawReferenceURL)
                    XCTAssertGreaterThan(
                        psnr, clearedPSNR(image.bitmap, raw) + 3,
                        "\(entry.path): not closer to the sRGB reference than to the unconverted pixels")
                }
                colour += 1
            default:
                XCTFail("\(entry.path): unknown comparison \(entry.compare)")
            }
        }
        // Without the HEIF, AVIF and JPEG XL traits: TIFF, BMP, ICO and the tagged JPEG/PNG/WebP.
        XCTAssertGreaterThan(exact, FormatsCorpus.minimum(Self.allFormatsBuiltIn ? 40 : 10))
        XCTAssertGreaterThan(close, FormatsCorpus.minimum(Self.allFormatsBuiltIn ? 40 : 2))
        XCTAssertGreaterThan(colour, FormatsCorpus.minimum(Self.allFormatsBuiltIn ? 15 : 2))
    }

    /// libavif 0.11 drops the alpha of a still whose colour is a grid and whose alpha is not;
    /// such files go to libheif, which keeps it.
    func testAGridImageWithANonGridAlphaKeepsItsAlpha() throws {
        try XCTSkipUnless(ImageFormat.avif.isDecodingSupported, "built without the AVIF trait")
        let entry = try FormatsCorpus.entry("avif/libavif/color_grid_alpha_nogrid.avif")
        let image = try ImageCodersManager.shared.decode(entry.data)
        XCTAssertEqual(image.format, .avif)
        XCTAssertFalse(image.isOpaque)
        let reference = try FormatsCorpus.reference(entry.referenceURL)
        XCTAssertTrue(reference.packedRGBA().enumerated().contains { $0.offset % 4 == 3 && $0.element == 0 })
        XCTAssertGreaterThan(clearedPSNR(image.bitmap, reference), 50)
    }

    func testAnimationsMatchTheirSampledFramesAndDurations() throws {
        for path in Self.builtIn([
            "avif/made/anim-lossless.avif", "jxl/made/anim-lossless.jxl", "avif/pillow/star.avifs",
            "jxl/conformance/animation_spline.jxl",
        ]) {
            let entry = try FormatsCorpus.entry(path)
            let image = try ImageCodersManager.shared.decode(entry.data)
            XCTAssertEqual(image.frameCount, entry.frames, path)
            XCTAssertTrue(image.frames.allSatisfy { $0.duration > 0 }, "\(path): every frame has a duration")
            XCTAssertEqual(image.loopCount, 0, "\(path) loops forever")
            // Sampled reference frames: ref/<path>.f<k>.png.
            for k in 1..<image.frameCount {
                let url = FormatsCorpus.root.appendingPathComponent("ref/\(path).f\(k).png")
                guard FileManager.default.fileExists(atPath: url.path) else { continue }
                let psnr = clearedPSNR(image.frames[k].bitmap, try FormatsCorpus.reference(url))
                XCTAssertGreaterThanOrEqual(psnr, entry.compare == "exact" ? 99 : 40, "\(path) frame \(k)")
            }
        }
    }

    func testInvalidFilesAreRefusedWithTypedErrors() throws {
        let entries = try FormatsCorpus.requireEntries().filter { !$0.isValid }
        XCTAssertGreaterThanOrEqual(entries.count, FormatsCorpus.minimum(10))
        let typed: Set<ImageError.Code> = [
            .badImageData, .truncatedData, .zeroPixels, .decompressionBomb, .unsupportedFormat,
        ]
        for entry in entries {
            XCTAssertThrowsError(try ImageCodersManager.shared.decode(entry.data), entry.path) { error in
                guard let error = error as? ImageError else { return XCTFail("\(entry.path): untyped \(error)") }
                XCTAssertTrue(typed.contains(error.code), "\(entry.path): \(error)")
                XCTAssertFalse(error.message.isEmpty)
            }
        }
    }

    /// Every prefix of a valid file either decodes or fails with a typed error: no trap, no hang.
    func testTruncatedFilesFailWithTypedErrors() throws {
        for path in [
            "heif/made/card-420.heic", "avif/made/anim-alpha.avif", "jxl/made/lossy-d1.jxl",
            "tiff/pillow/hopper_lzw.tif",
            "bmp/bmpsuite/pal8rle.bmp", "ico/made/multi-size.ico", "tiff/pillow/hopper_jpg.tif",
        ] {
            let data = try FormatsCorpus.entry(path).data
            for fraction in [0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99] {
                let prefix = data.prefix(Int(Double(data.count) * fraction))
                do { _ = try ImageCodersManager.shared.decode(prefix) } catch {
                    XCTAssertFalse(error.message.isEmpty, "\(path) at \(fraction)")
                }
            }
        }
    }

    func testThumbnailsOfEveryNewFormatAreScaledAndConverted() throws {
        var options = ImageDecodingOptions()
        options.thumbnailPixelSize = PixelSize(64)
        for path in Self.builtIn([
            "heif/made/card-420.heic", "avif/libavif/abc_color_irot_alpha_irot.avif", "jxl/conformance/grayscale.jxl",
            "tiff/pillow/copyleft.tiff",
            "bmp/made/bottomup-24.bmp", "bmp/bmpsuite/pal8rle.bmp", "ico/made/multi-size.ico", "tiff/made/orient-6.tif",
        ]) {
            let entry = try FormatsCorpus.entry(path)
            let thumbnail = try ImageCodersManager.shared.decode(entry.data, options: options)
            let full = try ImageCodersManager.shared.decode(entry.data)
            XCTAssertEqual(thumbnail.bitmap.size, DecodeTarget.size(for: full.bitmap.size, options: options), path)
            // The same picture: the full decode resized lands close to the thumbnail.
            let resized = try full.bitmap.resized(to: thumbnail.bitmap.size)
            XCTAssertGreaterThan(clearedPSNR(thumbnail.bitmap, resized), 30, path)
        }
        // A colour-managed thumbnail converts too (after scaling).
        let adobe = try FormatsCorpus.entry("icc/jpeg/adobe.jpg")
        let thumbnail = try ImageCodersManager.shared.decode(adobe.data, options: options)
        let reference = try FormatsCorpus.reference(adobe.referenceURL).resized(to: thumbnail.bitmap.size)
        let raw = try FormatsCorpus.reference(adobe.rawReferenceURL).resized(to: thumbnail.bitmap.size)
        XCTAssertGreaterThan(clearedPSNR(thumbnail.bitmap, reference), clearedPSNR(thumbnail.bitmap, raw) + 10)
    }

    func testDecodingLimitsRefuseLargeHeadersBeforeDecoding() throws {
        let small = DecodingLimits(maxPixelsPerFrame: 100 * 100, maxTotalBytes: 1 << 20, maxWorkingBytes: 1 << 20)
        for path in Self.builtIn([
            "heif/made/card-420.heic", "avif/made/10bit.avif", "jxl/made/lossy-d1.jxl", "tiff/pillow/copyleft.tiff",
            "bmp/made/bottomup-24.bmp",
        ]) {
            XCTAssertThrowsError(
                try ImageCodersManager.shared.decode(
                    FormatsCorpus.entry(path).data,
                    options: ImageDecodingOptions(limits: small)), path
            ) { error in
                XCTAssertEqual((error as? ImageError)?.code, .decompressionBomb, path)
            }
        }
    }

    func testMultiPageTIFFShowsItsFirstPage() throws {
        let data = try FormatsCorpus.entry("tiff/pillow/multipage.tiff").data
        XCTAssertEqual(TIFFCoder.pageCount(data), 3)
        XCTAssertEqual(try ImageCodersManager.shared.decode(data).frameCount, 1)
    }

    /// `pages`: page n alone, or every page as frames; page 0 by either way is the default decode.
    func testMultiPageTIFFPagesCanBeChosen() throws {
        let data = try FormatsCorpus.entry("tiff/pillow/multipage.tiff").data
        let first = try ImageCodersManager.shared.decode(data)
        var options = ImageDecodingOptions()
        var pages: [Bitmap] = []
        for index in 0..<3 {
            options.pages = .page(index)
            let page = try ImageCodersManager.shared.decode(data, options: options)
            XCTAssertEqual(page.frameCount, 1)
            pages.append(page.bitmap)
        }
        XCTAssertTrue(samePixels(pages[0], first.bitmap))
        XCTAssertFalse(samePixels(pages[0], pages[1]) && samePixels(pages[1], pages[2]), "the pages differ")
        options.pages = .page(3)
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(data, options: options)) { error in
            XCTAssertEqual((error as? ImageError)?.code, .invalidArgument)
        }
        options.pages = .all
        let sameSize = pages.allSatisfy { $0.size == pages[0].size }
        let all = Result { () throws(ImageError) -> DecodedImage in
            try ImageCodersManager.shared.decode(data, options: options)
        }
        switch all {
        case .success(let image):
            XCTAssertTrue(sameSize)
            XCTAssertEqual(image.frameCount, 3)
            for index in 0..<3 { XCTAssertTrue(samePixels(image.frames[index].bitmap, pages[index]), "page \(index)") }
        case .failure(let error):
            // Pages of different sizes are decoded one at a time.
            XCTAssertFalse(sameSize, "\(error)")
            XCTAssertEqual(error.code, .unsupportedFormat)
        }
    }

    func testEmbeddedOrientationInsideHEIFIsNotApplied() throws {
        // orient-6.heic stores irot (applied by libheif) — the displayed size is the manifest's.
        try XCTSkipUnless(ImageFormat.heif.isDecodingSupported, "built without the HEIF trait")
        let entry = try FormatsCorpus.entry("heif/made/orient-6.heic")
        let image = try ImageCodersManager.shared.decode(entry.data)
        XCTAssertEqual(image.bitmap.size, PixelSize(width: 192, height: 256))
        XCTAssertEqual(image.orientation, .up)
    }

    /// BigTIFF (magic 43, 64-bit offsets; libtiff reads it) is sniffed as TIFF and decodes, in
    /// both byte orders: a 3×2 RGB image written here, IFD entries of 20 bytes, offsets of 8.
    func testBigTIFFIsRecognisedAndDecodes() throws {
        let pixels: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90]
        for bigEndian in [false, true] {
            func u16(_ value: Int) -> [UInt8] {
                let bytes = [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)]
                return bigEndian ? bytes.reversed() : bytes
            }
            func u64(_ value: Int) -> [UInt8] {
                let bytes = (0..<8).map { UInt8(value >> ($0 * 8) & 0xFF) }
                return bigEndian ? bytes.reversed() : bytes
            }
            /// An entry whose value fits in the 8 bytes beside it (left-justified).
            func entry(_ tag: Int, type: Int, count: Int, inline: [UInt8]) -> [UInt8] {
                u16(tag) + u16(type) + u64(count) + inline + [UInt8](repeating: 0, count: 8 - inline.count)
            }
            let short = 3, long8 = 16
            let dataOffset = 16 + 8 + 10 * 20 + 8
            var bytes: [UInt8] = (bigEndian ? Array("MM".utf8) : Array("II".utf8)) + u16(43) + u16(8) + u16(0) + u64(16)
            bytes += u64(10)
            bytes += entry(256, type: short, count: 1, inline: u16(3))
            bytes += entry(257, type: short, count: 1, inline: u16(2))
            bytes += entry(258, type: short, count: 3, inline: u16(8) + u16(8) + u16(8))
            bytes += entry(259, type: short, count: 1, inline: u16(1))
            bytes += entry(262, type: short, count: 1, inline: u16(2))
            bytes += entry(273, type: long8, count: 1, inline: u64(dataOffset))
            bytes += entry(277, type: short, count: 1, inline: u16(3))
            bytes += entry(278, type: short, count: 1, inline: u16(2))
            bytes += entry(279, type: long8, count: 1, inline: u64(pixels.count))
            bytes += entry(284, type: short, count: 1, inline: u16(1))
            bytes += u64(0)
            XCTAssertEqual(bytes.count, dataOffset)
            let data = Data(bytes + pixels)
            XCTAssertEqual(ImageSignature(data).format, .tiff)
            let image = try ImageCodersManager.shared.decode(data)
            XCTAssertEqual(image.width, 3)
            XCTAssertEqual(image.height, 2)
            var expected: [UInt8] = []
            for index in 0..<6 { expected += pixels[index * 3..<index * 3 + 3] + [255] }
            XCTAssertEqual(image.frames[0].bitmap.packedRGBA(), expected, bigEndian ? "big-endian" : "little-endian")
        }
    }

    /// 12-bit samples (libtiff's RGBA reader refuses them) are read and scaled to 8 bits: a 2×2
    /// RGB TIFF written here, samples packed most significant bit first.
    func testTwelveBitTIFFIsScaledToEightBits() throws {
        let samples: [Int] = [4095, 0, 2048, 100, 200, 300, 4000, 3000, 1000, 0, 4095, 17]
        var packed: [UInt8] = []
        var accumulator = 0, count = 0
        for sample in samples {
            accumulator = accumulator << 12 | sample
            count += 12
            while count >= 8 {
                packed.append(UInt8(accumulator >> (count - 8) & 0xFF))
                count -= 8
            }
        }
        XCTAssertEqual(packed.count, 18)  // 72 bits a row, no padding
        let data = Self.classicTIFF(pages: [(width: 2, height: 2, bits: 12, pixels: packed)])
        XCTAssertEqual(data.count, 8 + (2 + 9 * 12 + 4) + 6 + packed.count)  // header, IFD, bits, samples
        let image = try ImageCodersManager.shared.decode(data)
        var expected: [UInt8] = []
        for pixel in 0..<4 {
            expected += samples[pixel * 3..<pixel * 3 + 3].map { UInt8(($0 * 255 + 2047) / 4095) } + [255]
        }
        XCTAssertEqual(image.frames[0].bitmap.packedRGBA(), expected)
    }

    /// 16-bit RGBA with associated alpha: made straight at 16 bits, then scaled. A faint pixel
    /// (alpha 300 of 65535) keeps its colour; libtiff's RGBA reader, dropping to 8 bits first,
    /// made it white (1 / 1 × 255).
    func testSixteenBitAssociatedAlphaIsUnpremultipliedAtSixteenBits() throws {
        func u16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        // Straight (32767, 65535, 0) at alpha 300, premultiplied: (150, 300, 0); an opaque pixel; a
        // transparent one; half alpha.
        let premultiplied: [[Int]] = [
            [150, 300, 0, 300], [65535, 0, 32768, 65535], [0, 0, 0, 0], [16384, 0, 32767, 32767],
        ]
        let data = Self.classicTIFF(
            pages: [(width: 4, height: 1, bits: 16, pixels: premultiplied.flatMap { $0.flatMap(u16) })], alpha: 1)
        let image = try ImageCodersManager.shared.decode(data)
        XCTAssertFalse(image.isOpaque)
        XCTAssertEqual(
            image.bitmap.packedRGBA(),
            [128, 255, 0, 1] + [255, 0, 128, 255] + [0, 0, 0, 0] + [128, 0, 255, 127])
        // 12-bit associated alpha takes the same path, packed.
        var packed: [UInt8] = []
        var accumulator = 0, count = 0
        for sample in [2047, 4095, 0, 4095, 10, 20, 0, 40] {
            accumulator = accumulator << 12 | sample
            count += 12
            while count >= 8 {
                packed.append(UInt8(accumulator >> (count - 8) & 0xFF))
                count -= 8
            }
        }
        let twelve = try ImageCodersManager.shared.decode(
            Self.classicTIFF(pages: [(width: 2, height: 1, bits: 12, pixels: packed)], alpha: 1))
        XCTAssertEqual(twelve.bitmap.packedRGBA(), [127, 255, 0, 255] + [64, 128, 0, 2])
    }

    /// `.all` on pages of one size: a 2-page 2×2 RGB TIFF written here; each page is a frame.
    func testEveryPageOfOneSizeBecomesAFrame() throws {
        let pages: [[UInt8]] = [[255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]
        let data = Self.classicTIFF(pages: pages.map { (width: 2, height: 2, bits: 8, pixels: $0) })
        XCTAssertEqual(TIFFCoder.pageCount(data), 2)
        var options = ImageDecodingOptions()
        options.pages = .all
        let image = try ImageCodersManager.shared.decode(data, options: options)
        XCTAssertEqual(image.frameCount, 2)
        for (index, pixels) in pages.enumerated() {
            var expected: [UInt8] = []
            for pixel in 0..<4 { expected += pixels[pixel * 3..<pixel * 3 + 3] + [255] }
            XCTAssertEqual(image.frames[index].bitmap.packedRGBA(), expected, "page \(index)")
        }
    }

    /// A little-endian classic TIFF of uncompressed RGB pages, one strip each, written by hand:
    /// per page its IFD (9 entries), the bits-per-sample array, then its packed samples.
    /// A little-endian, uncompressed RGB TIFF of one strip per page; `alpha` adds a fourth sample
    /// (ExtraSamples 1: associated, 2: unassociated). Samples of 16 bits are written whole,
    /// little-endian; other depths packed as `pixels` holds them.
    static func classicTIFF(pages: [(width: Int, height: Int, bits: Int, pixels: [UInt8])], alpha: Int? = nil) -> Data {
        func u16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
        func u32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(value >> ($0 * 8) & 0xFF) } }
        func entry(_ tag: Int, type: Int, value: [UInt8], count: Int = 1) -> [UInt8] {
            u16(tag) + u16(type) + u32(count) + value + [UInt8](repeating: 0, count: 4 - value.count)
        }
        let samples = alpha == nil ? 3 : 4
        let short = 3, long = 4, entries = alpha == nil ? 9 : 10, ifdSize = 2 + entries * 12 + 4
        var bytes: [UInt8] = Array("II".utf8) + u16(42) + u32(8)
        for (index, page) in pages.enumerated() {
            let bitsAt = bytes.count + ifdSize, dataAt = bitsAt + 2 * samples
            let next = index + 1 < pages.count ? dataAt + page.pixels.count : 0
            bytes += u16(entries)
            bytes += entry(256, type: short, value: u16(page.width)) + entry(257, type: short, value: u16(page.height))
            bytes +=
                entry(258, type: short, value: u32(bitsAt), count: samples) + entry(259, type: short, value: u16(1))
            bytes += entry(262, type: short, value: u16(2)) + entry(273, type: long, value: u32(dataAt))
            bytes += entry(277, type: short, value: u16(samples)) + entry(278, type: short, value: u16(page.height))
            bytes += entry(279, type: long, value: u32(page.pixels.count))
            if let alpha { bytes += entry(338, type: short, value: u16(alpha)) }
            bytes += u32(next) + (0..<samples).flatMap { _ in u16(page.bits) } + page.pixels
        }
        return Data(bytes)
    }
}
