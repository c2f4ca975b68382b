import Foundation
import XCTest

@testable import ImageKit

#if AVIF
import CAVIF
#endif

/// HDR sources (PQ and HLG) tone-mapped to SDR sRGB, compared with a double-precision reference
/// written here without tables (see ``HDRReference``); libavif's own HDR test files, and files
/// whose code values the test chose (lossless AVIF and JPEG XL, 16-bit PNG, HEIC).
final class HDRTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/hdr")

    func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: Self.fixtures.appendingPathComponent(name))
    }

    // MARK: - Gain maps

    func testGainMapJPEGsDecodeTheirSDRBaseAndReportTheGainMap() throws {
        for name in ["seine_sdr_gainmap_srgb.jpg", "apple_gainmap_new.jpg"] {
            let image = try ImageCodersManager.shared.decode(try fixture(name))
            XCTAssertTrue(image.hasGainMap, name)
            XCTAssertNil(image.hdrTransfer, name)
            XCTAssertEqual(image.format, .jpeg)
        }
        let plain = try ImageCodersManager.shared.encode(
            try ImageCodersManager.shared.decode(try fixture("seine_sdr_gainmap_srgb.jpg")), as: .jpeg, options: .init()
        )
        XCTAssertFalse(try ImageCodersManager.shared.decode(plain).hasGainMap)
    }

    func testInfoReportsHDRGainMapsAndPages() throws {
        let tool = try XCTUnwrap(DecodeMemoryBoundTests.tool, "the imagekit tool is not built beside the tests")
        func info(_ path: String) throws -> [String: Any] {
            let process = Process()
            process.executableURL = tool
            process.arguments = ["info", "--json", path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        let gainMap = try info(Self.fixtures.appendingPathComponent("seine_sdr_gainmap_srgb.jpg").path)
        XCTAssertEqual(gainMap["gainMap"] as? Bool, true)
        XCTAssertEqual(gainMap["toneMapped"] as? Bool, false)
        XCTAssertTrue(gainMap["hdrTransfer"] is NSNull)
        XCTAssertTrue(gainMap["pages"] is NSNull)
        #if AVIF
        let pq = try info(Self.fixtures.appendingPathComponent("seine_hdr_rec2020.avif").path)
        XCTAssertEqual(pq["hdrTransfer"] as? String, "pq")
        XCTAssertEqual(pq["toneMapped"] as? Bool, true)
        XCTAssertEqual(pq["gainMap"] as? Bool, false)
        let tmap = try info(Self.fixtures.appendingPathComponent("seine_sdr_gainmap_srgb.avif").path)
        XCTAssertEqual(tmap["gainMap"] as? Bool, true)
        #endif
        let directory = TemporaryDirectory("info-pages")
        defer { directory.remove() }
        let tiff = directory.url.appendingPathComponent("three.tiff")
        let page = (width: 2, height: 2, bits: 8, pixels: [UInt8](repeating: 90, count: 12))
        try FormatsCorpusTests.classicTIFF(pages: [page, page, page]).write(to: tiff)
        XCTAssertEqual(try info(tiff.path)["pages"] as? Int, 3)
    }

    // MARK: - PNG with cICP

    func testSixteenBitPNGWithPQCicpIsToneMapped() throws {
        let width = 32, height = 4
        var samples: [UInt16] = []
        for y in 0..<height {
            for x in 0..<width {
                let level = UInt16(x * 2114)
                samples += y < 2 ? [level, level, level] : [level, UInt16(x * 1000), 4000]
            }
        }
        let png = Self.png16(samples, width: width, height: height, cicp: [9, 16, 0, 1])
        let decoded = try ImageCodersManager.shared.decode(png)
        XCTAssertEqual(decoded.hdrTransfer, .pq)
        let reference = try HDRReference.toneMap(
            samples, width: width, height: height, maxCode: 65535, transfer: .pq, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(decoded.bitmap, reference), 45)
        // A scaled decode maps, then scales.
        var options = ImageDecodingOptions.default
        options.thumbnailPixelSize = PixelSize(width: 16, height: 2)
        XCTAssertEqual(
            try ImageCodersManager.shared.decode(png, options: options).bitmap.size, options.thumbnailPixelSize)
        let hlg = try ImageCodersManager.shared.decode(
            Self.png16(samples, width: width, height: height, cicp: [9, 18, 0, 1]))
        XCTAssertEqual(hlg.hdrTransfer, .hlg)
        // sRGB's code point (13) is SDR: the high bytes, as before.
        let sdr = try ImageCodersManager.shared.decode(
            Self.png16(samples, width: width, height: height, cicp: [1, 13, 0, 1]))
        XCTAssertNil(sdr.hdrTransfer)
        XCTAssertEqual(sdr.bitmap[31, 0].r, UInt8((31 * 2114) >> 8))
    }

    func testAThumbnailIsReducedInSixteenBitsBeforeItIsMapped() throws {
        // 64 × 32 → a 16 × 8 thumbnail: blocks of 4 × 4 codes averaged, then mapped.
        let width = 64, height = 32
        var samples: [UInt16] = []
        for y in 0..<height {
            for x in 0..<width { samples += [UInt16(x * 1000), UInt16(y * 2000), UInt16((x * y * 37) % 60000)] }
        }
        let png = Self.png16(samples, width: width, height: height, cicp: [9, 16, 0, 1])
        var options = ImageDecodingOptions.default
        options.thumbnailPixelSize = PixelSize(width: 16, height: 8)
        let thumbnail = try ImageCodersManager.shared.decode(png, options: options)
        XCTAssertEqual(thumbnail.bitmap.size, PixelSize(width: 16, height: 8))
        var averaged: [UInt16] = []
        for by in 0..<8 {
            for bx in 0..<16 {
                for channel in 0..<3 {
                    var sum = 0
                    for y in by * 4..<by * 4 + 4 {
                        for x in bx * 4..<bx * 4 + 4 { sum += Int(samples[(y * width + x) * 3 + channel]) }
                    }
                    averaged.append(UInt16((sum + 8) / 16))
                }
            }
        }
        let reference = try HDRReference.toneMap(
            averaged, width: 16, height: 8, maxCode: 65535, transfer: .pq, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(thumbnail.bitmap, reference), 45)
        // A factor that leaves partial blocks: 64 × 32 → 20 × 10 (factor 3, 22 × 11, then resized).
        options.thumbnailPixelSize = PixelSize(width: 20, height: 10)
        XCTAssertEqual(
            try ImageCodersManager.shared.decode(png, options: options).bitmap.size, PixelSize(width: 20, height: 10))
    }

    func testATruncatedHDRPNGIsATypedError() throws {
        let png = Self.png16(
            [UInt16](repeating: 30000, count: 64 * 64 * 3), width: 64, height: 64, cicp: [9, 16, 0, 1])
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(png.prefix(png.count - 40))) { error in
            XCTAssertEqual((error as? ImageError)?.code, .truncatedData, "\(error)")
        }
    }

    /// A 16-bit RGB PNG (stored deflate blocks) with a `cICP` chunk.
    static func png16(_ rgb: [UInt16], width: Int, height: Int, cicp: [UInt8]) -> Data {
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)
            for value in rgb[(y * width * 3)..<((y + 1) * width * 3)] {
                raw += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65535, raw.count - offset)
            let last: UInt8 = offset + count == raw.count ? 1 : 0
            zlib += [last, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8(~count >> 8 & 0xFF)]
            zlib += raw[offset..<offset + count]
            offset += count
        } while offset < raw.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        zlib += HostileImages.u32be(Int(b << 16 | a))
        let header = HostileImages.u32be(width) + HostileImages.u32be(height) + [16, 2, 0, 0, 0]
        let bytes =
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + HostileImages.chunk("IHDR", header)
            + HostileImages.chunk("cICP", cicp) + HostileImages.chunk("IDAT", zlib) + HostileImages.chunk("IEND", [])
        return Data(bytes)
    }
}

/// A second implementation of ImageKit's tone mapping, in double precision and without tables:
/// ST 2084 and ARIB STD-B67 curves, BT.2100's HLG OOTF (1000 cd/m², γ 1.2), BT.2390's EETF from
/// 1000 cd/m² to SDR white (203 cd/m²) on max(R, G, B), the published BT.2020 and P3 to BT.709
/// matrices, and the sRGB curve.
enum HDRReference {
    enum Transfer { case pq, hlg }
    enum Primaries { case bt2020, displayP3 }

    static let m1 = 0.1593017578125, m2 = 78.84375, c1 = 0.8359375, c2 = 18.8515625, c3 = 18.6875

    static func pqToNits(_ e: Double) -> Double {
        let p = pow(e, 1 / m2)
        return 10_000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
    }

    static func nitsToPQ(_ nits: Double) -> Double {
        let y = pow(nits / 10_000, m1)
        return pow((c1 + c2 * y) / (1 + c3 * y), m2)
    }

    static func hlgInverseOETF(_ e: Double) -> Double {
        let a = 0.17883277, b = 0.28466892, c = 0.55991073
        return e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
    }

    /// BT.2390 EETF, 1000 → 203 cd/m².
    static func eetf(_ nits: Double) -> Double {
        let source = nitsToPQ(1000), target = nitsToPQ(203)
        let e1 = min(nitsToPQ(nits) / source, 1)
        let maxLum = target / source
        let ks = 1.5 * maxLum - 0.5
        guard e1 > ks else { return nits }
        let t = (e1 - ks) / (1 - ks)
        let p =
            (2 * pow(t, 3) - 3 * t * t + 1) * ks + (pow(t, 3) - 2 * t * t + t) * (1 - ks)
            + (-2 * pow(t, 3) + 3 * t * t) * maxLum
        return pqToNits(p * source)
    }

    static func srgbEncode(_ v: Double) -> Double {
        let c = min(max(v, 0), 1)
        return c <= 0.0031308 ? 12.92 * c : 1.055 * pow(c, 1 / 2.4) - 0.055
    }

    static func toneMap(
        _ samples: [UInt16], width: Int, height: Int, maxCode: Double, transfer: Transfer, primaries: Primaries
    ) throws -> Bitmap {
        let matrix: [Double]
        let luma: [Double]
        switch primaries {
        case .bt2020:
            // ITU-R BT.2087's BT.2020-to-BT.709 matrix (linear light).
            matrix = [1.6605, -0.5876, -0.0728, -0.1246, 1.1329, -0.0083, -0.0182, -0.1006, 1.1187]
            luma = [0.2627, 0.6780, 0.0593]
        case .displayP3:
            matrix = [1.2249, -0.2247, 0, -0.0420, 1.0419, 0, -0.0197, -0.0786, 1.0979]
            luma = [0.2290, 0.6917, 0.0793]
        }
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let index = (y * width + x) * 3
                var rgb = (0..<3).map { Double(samples[index + $0]) / maxCode }
                switch transfer {
                case .pq:
                    rgb = rgb.map { pqToNits($0) }
                case .hlg:
                    rgb = rgb.map { hlgInverseOETF($0) }
                    let ys = luma[0] * rgb[0] + luma[1] * rgb[1] + luma[2] * rgb[2]
                    rgb = rgb.map { 1000 * pow(ys, 0.2) * $0 }
                }
                let peak = rgb.max()!
                if peak > 0 {
                    let scale = peak >= 1000 ? 203 / peak : eetf(peak) / peak
                    rgb = rgb.map { $0 * scale }
                }
                rgb = rgb.map { $0 / 203 }
                let out = (0..<3).map { row in
                    srgbEncode(matrix[row * 3] * rgb[0] + matrix[row * 3 + 1] * rgb[1] + matrix[row * 3 + 2] * rgb[2])
                }
                let pixel = buffer.row(y) + x * 4
                for channel in 0..<3 { pixel[channel] = UInt8((out[channel] * 255).rounded()) }
                pixel[3] = 255
            }
        }
        return buffer.freeze(isOpaque: true)
    }
}
#if AVIF
extension HDRTests {
    // MARK: - libavif's HDR files

    func testLibavifPQRec2020PhotoMatchesTheReference() throws {
        try assertMatchesReference("seine_hdr_rec2020.avif", primaries: .bt2020, minimumPSNR: 45)
    }

    func testLibavifPQDisplayP3FilmFrameMatchesTheReference() throws {
        try assertMatchesReference("cosmos1650_yuv444_10bpc_p3pq.avif", primaries: .displayP3, minimumPSNR: 45)
    }

    /// The file's samples as libavif decodes them (10 bits), tone-mapped by the reference.
    private func assertMatchesReference(
        _ name: String, primaries: HDRReference.Primaries, minimumPSNR: Double,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let data = try fixture(name)
        let decoded = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(decoded.hdrTransfer, .pq, file: file, line: line)
        XCTAssertTrue(decoded.isToneMapped, file: file, line: line)
        let (samples, width, height) = try Self.libavifSamples(data)
        let reference = try HDRReference.toneMap(
            samples, width: width, height: height, maxCode: 1023, transfer: .pq, primaries: primaries)
        let quality = psnr(decoded.bitmap, reference)
        XCTAssertGreaterThan(quality, minimumPSNR, "\(name): \(quality) dB", file: file, line: line)
        // Not the code values shown as sRGB (what the decoder did before: washed out).
        let naive = try Self.codeValuesAsSRGB(samples, width: width, height: height, maxCode: 1023)
        XCTAssertLessThan(psnr(decoded.bitmap, naive), 25, file: file, line: line)
    }

    // MARK: - Files whose code values the test chose

    func testPQLevelsAndPrimariesMatchTheReference() throws {
        // PQ codes from black to 10 000 cd/m², in gray and in saturated BT.2020 colours.
        var samples: [UInt16] = []
        let levels: [UInt16] = [0, 64, 200, 300, 400, 450, 500, 520, 560, 600, 700, 767, 800, 900, 1023]
        for level in levels {
            samples += [level, level, level]
            samples += [level, 0, 0]
            samples += [0, level, level / 2]
        }
        let width = 3, height = levels.count
        let data = try Self.losslessAVIF(samples, width: width, height: height, transfer: 16, primaries: 9)
        let decoded = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(decoded.hdrTransfer, .pq)
        let reference = try HDRReference.toneMap(
            samples, width: width, height: height, maxCode: 1023, transfer: .pq, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(decoded.bitmap, reference), 45)
        let gray = (0..<height).map { decoded.bitmap[0, $0].r }
        XCTAssertEqual(gray.first, 0)
        XCTAssertEqual(gray.last, 255, "the source's peak and above reach white")
        XCTAssertEqual(gray, gray.sorted(), "brighter codes never come out darker: \(gray)")
        // Below the knee the curve is the identity: 50 cd/m² is 50/203 of SDR white.
        let fiftyNits = UInt16((HDRReference.nitsToPQ(50) * 1023).rounded())
        let one = try ImageCodersManager.shared.decode(
            try Self.losslessAVIF(
                [fiftyNits, fiftyNits, fiftyNits], width: 1, height: 1, transfer: 16, primaries: 9))
        let expected = HDRReference.srgbEncode(HDRReference.pqToNits(Double(fiftyNits) / 1023) / 203) * 255
        XCTAssertEqual(Double(one.bitmap[0, 0].r), expected, accuracy: 1)
    }

    func testHLGMatchesTheReference() throws {
        var samples: [UInt16] = []
        let levels: [UInt16] = [0, 100, 300, 500, 600, 700, 750, 800, 900, 1000, 1023]
        for level in levels {
            samples += [level, level, level]
            samples += [level, level / 3, 0]
        }
        let data = try Self.losslessAVIF(samples, width: 2, height: levels.count, transfer: 18, primaries: 9)
        let decoded = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(decoded.hdrTransfer, .hlg)
        let reference = try HDRReference.toneMap(
            samples, width: 2, height: levels.count, maxCode: 1023, transfer: .hlg, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(decoded.bitmap, reference), 45)
        let gray = (0..<levels.count).map { decoded.bitmap[0, $0].r }
        XCTAssertEqual(gray, gray.sorted())
        XCTAssertEqual(gray.last, 255)
    }

    func testHDRThumbnailsMatchTheFullDecodeScaled() throws {
        var options = ImageDecodingOptions.default
        options.thumbnailPixelSize = PixelSize(100)
        for name in ["seine_hdr_rec2020.avif", "cosmos1650_yuv444_10bpc_p3pq.avif", "pq_gradient.jxl"] {
            #if !JXL
            if name.hasSuffix(".jxl") { continue }
            #endif
            let data = try fixture(name)
            let thumbnail = try ImageCodersManager.shared.decode(data, options: options)
            let full = try ImageCodersManager.shared.decode(data)
            XCTAssertEqual(thumbnail.hdrTransfer, .pq, name)
            XCTAssertEqual(thumbnail.bitmap.size, DecodeTarget.size(for: full.bitmap.size, options: options), name)
            let quality = psnr(thumbnail.bitmap, try full.bitmap.resized(to: thumbnail.bitmap.size))
            XCTAssertGreaterThan(quality, 30, "\(name): \(quality) dB")
        }
    }

    func testHDRAVIFsConvertedInBandsMatchTheWholeFrame() throws {
        // libavif upsamples 4:2:0 chroma from the neighbouring chroma rows: each band's view
        // carries the rows that upsampling reads, so the narrowest bands (two rows) give the
        // same bytes as one band for the whole frame, at every size and reduction.
        var thumbnail = ImageDecodingOptions.default
        thumbnail.thumbnailPixelSize = PixelSize(12)
        for format in [AVIF_PIXEL_FORMAT_YUV420, AVIF_PIXEL_FORMAT_YUV422, AVIF_PIXEL_FORMAT_YUV444] {
            for (width, height, alpha) in [(37, 29, false), (40, 31, true), (9, 2, false)] {
                let data = try Self.pqAVIF(width: width, height: height, format: format, alpha: alpha)
                for options in [ImageDecodingOptions.default, thumbnail] {
                    let whole = try decodedInBands(of: Int.max / 2, data, options)
                    let narrow = try decodedInBands(of: 1, data, options)
                    let label =
                        "\(format) \(width)x\(height) alpha \(alpha) \(options.thumbnailPixelSize.map { "\($0)" } ?? "full")"
                    XCTAssertEqual(whole.hdrTransfer, .pq, label)
                    XCTAssertEqual(narrow.bitmap.size, whole.bitmap.size, label)
                    XCTAssertEqual(differingBytes(narrow, whole), 0, label)
                }
            }
        }
        let seine = try fixture("seine_hdr_rec2020.avif")
        XCTAssertEqual(
            differingBytes(
                try decodedInBands(of: 64 << 10, seine, .default), try decodedInBands(of: Int.max / 2, seine, .default)),
            0)
    }

    private func differingBytes(_ a: DecodedImage, _ b: DecodedImage) -> Int {
        guard a.bitmap.size == b.bitmap.size else { return -1 }
        return zip(a.bitmap.packedRGBA(), b.bitmap.packedRGBA()).reduce(0) { $0 + ($1.0 == $1.1 ? 0 : 1) }
    }

    private func decodedInBands(of bytes: Int, _ data: Data, _ options: ImageDecodingOptions) throws -> DecodedImage {
        let saved = AVIFCoder.toneMappingBandBytes.load(ordering: .relaxed)
        AVIFCoder.toneMappingBandBytes.store(bytes, ordering: .relaxed)
        defer { AVIFCoder.toneMappingBandBytes.store(saved, ordering: .relaxed) }
        return try ImageCodersManager.shared.decode(data, options: options)
    }

    func testSDRAVIFIsNotToneMapped() throws {
        let samples: [UInt16] = [0, 512, 1023]
        let data = try Self.losslessAVIF(samples, width: 1, height: 1, transfer: 13, primaries: 1)
        let decoded = try ImageCodersManager.shared.decode(data)
        XCTAssertNil(decoded.hdrTransfer)
        XCTAssertFalse(decoded.isToneMapped)
        XCTAssertEqual(decoded.bitmap[0, 0].g, 128)
    }

    func testAnimatedHDRFramesAreToneMappedOneAtATime() throws {
        // The lazy cursor path maps each frame as the eager decode does.
        let samples: [UInt16] = [600, 600, 600]
        let data = try Self.losslessAVIF(samples, width: 1, height: 1, transfer: 16, primaries: 9)
        let eager = try ImageCodersManager.shared.decode(data)
        let cursor = try AVIFAnimationCursor(data: data)
        let frame = try cursor.decodeNext()
        XCTAssertTrue(frame[0, 0] == eager.bitmap[0, 0])
    }

    // MARK: - Other tracks in an image sequence

    func testAnImageSequenceWithAnAudioTrackDecodes() throws {
        // libavif 0.11 alone: "Track ID [2] has an invalid size"; the audio track is hidden from it.
        let data = try fixture("colors-animated-8bpc-audio.avif")
        let decoded = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(decoded.frameCount, 5)
        XCTAssertEqual(decoded.width, 150)
        XCTAssertEqual(decoded.height, 150)
        let info = try XCTUnwrap(try AVIFCoder().animationInfo(data, limits: .default))
        XCTAssertEqual(info.durations.count, 5)
        // The bytes handed in are left as they were.
        XCTAssertEqual(try fixture("colors-animated-8bpc-audio.avif"), data)
        XCTAssertEqual(BMFFBoxes.foreignTracks(in: UnsafeRawBufferPointer(start: nil, count: 0)), [])
        let foreign = data.withUnsafeBytes { BMFFBoxes.foreignTracks(in: $0) }
        XCTAssertEqual(foreign, [996], "the audio trak, and not the image sequence's")
    }

    func testTruncatedMovieBoxesAreLeftToLibavif() throws {
        let data = try fixture("colors-animated-8bpc-audio.avif")
        for cut in [300, 1000, 1100, 1500] {
            XCTAssertThrowsError(try ImageCodersManager.shared.decode(data.prefix(cut)), "cut at \(cut)")
        }
    }

    // MARK: - Helpers

    /// A lossless 10-bit 4:4:4 AVIF (identity matrix: RGB stored as is) with the given CICP.
    static func losslessAVIF(_ rgb: [UInt16], width: Int, height: Int, transfer: UInt16, primaries: UInt16) throws
        -> Data
    {
        let image = try XCTUnwrap(avifImageCreate(UInt32(width), UInt32(height), 10, AVIF_PIXEL_FORMAT_YUV444))
        defer { avifImageDestroy(image) }
        image.pointee.matrixCoefficients = UInt16(AVIF_MATRIX_COEFFICIENTS_IDENTITY)
        image.pointee.transferCharacteristics = transfer
        image.pointee.colorPrimaries = primaries
        image.pointee.yuvRange = AVIF_RANGE_FULL
        var rgbImage = avifRGBImage()
        avifRGBImageSetDefaults(&rgbImage, image)
        rgbImage.format = AVIF_RGB_FORMAT_RGB
        rgbImage.depth = 10
        var pixels = rgb
        let converted = pixels.withUnsafeMutableBytes { bytes -> avifResult in
            rgbImage.pixels = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            rgbImage.rowBytes = UInt32(width * 6)
            return avifImageRGBToYUV(image, &rgbImage)
        }
        XCTAssertEqual(converted, AVIF_RESULT_OK)
        return try encoded(image, quantizer: 0)
    }

    /// A lossy 10-bit PQ / BT.2020 AVIF of a colour gradient with sharp steps (so that chroma
    /// upsampling has something to blend), in `format`, with a gradient alpha when asked.
    static func pqAVIF(width: Int, height: Int, format: avifPixelFormat, alpha: Bool) throws -> Data {
        let image = try XCTUnwrap(avifImageCreate(UInt32(width), UInt32(height), 10, format))
        defer { avifImageDestroy(image) }
        image.pointee.transferCharacteristics = 16
        image.pointee.colorPrimaries = 9
        image.pointee.matrixCoefficients = 9
        var rgbImage = avifRGBImage()
        avifRGBImageSetDefaults(&rgbImage, image)
        rgbImage.format = alpha ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB
        rgbImage.depth = 10
        let channels = alpha ? 4 : 3
        var pixels = [UInt16](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                let index = (y * width + x) * channels
                pixels[index] = UInt16((x * 1023 / max(1, width - 1) + (y % 3) * 200) % 1024)
                pixels[index + 1] = UInt16(((x / 3 + y) % 2) * 700 + 100)
                pixels[index + 2] = UInt16(y * 1023 / max(1, height - 1))
                if alpha { pixels[index + 3] = UInt16((x + y) * 1023 / max(1, width + height - 2)) }
            }
        }
        let converted = pixels.withUnsafeMutableBytes { bytes -> avifResult in
            rgbImage.pixels = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            rgbImage.rowBytes = UInt32(width * 2 * channels)
            return avifImageRGBToYUV(image, &rgbImage)
        }
        XCTAssertEqual(converted, AVIF_RESULT_OK)
        return try encoded(image, quantizer: 10)
    }

    /// `image` written by libaom at one quantizer (0: lossless), speed 9.
    static func encoded(_ image: UnsafeMutablePointer<avifImage>, quantizer: Int32) throws -> Data {
        let encoder = try XCTUnwrap(avifEncoderCreate())
        defer { avifEncoderDestroy(encoder) }
        encoder.pointee.minQuantizer = quantizer
        encoder.pointee.maxQuantizer = quantizer
        encoder.pointee.speed = 9
        var output = avifRWData()
        defer { avifRWDataFree(&output) }
        XCTAssertEqual(avifEncoderWrite(encoder, image, &output), AVIF_RESULT_OK)
        return Data(bytes: output.data, count: output.size)
    }

    /// libavif's decode of `data` as 10-bit RGB samples.
    static func libavifSamples(_ data: Data) throws -> ([UInt16], Int, Int) {
        let image = try XCTUnwrap(avifImageCreateEmpty())
        defer { avifImageDestroy(image) }
        let decoder = try XCTUnwrap(avifDecoderCreate())
        defer { avifDecoderDestroy(decoder) }
        let result = data.withUnsafeBytes {
            avifDecoderReadMemory(decoder, image, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count)
        }
        XCTAssertEqual(result, AVIF_RESULT_OK)
        let width = Int(image.pointee.width), height = Int(image.pointee.height)
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.format = AVIF_RGB_FORMAT_RGB
        rgb.depth = 10
        var samples = [UInt16](repeating: 0, count: width * height * 3)
        let converted = samples.withUnsafeMutableBytes { bytes -> avifResult in
            rgb.pixels = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            rgb.rowBytes = UInt32(width * 6)
            return avifImageYUVToRGB(image, &rgb)
        }
        XCTAssertEqual(converted, AVIF_RESULT_OK)
        return (samples, width, height)
    }

    static func codeValuesAsSRGB(_ samples: [UInt16], width: Int, height: Int, maxCode: Int) throws -> Bitmap {
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let index = (y * width + x) * 3
                func byte(_ value: UInt16) -> UInt8 { UInt8((Double(value) * 255 / Double(maxCode)).rounded()) }
                let pixel = buffer.row(y) + x * 4
                (pixel[0], pixel[1], pixel[2], pixel[3]) = (
                    byte(samples[index]), byte(samples[index + 1]), byte(samples[index + 2]), 255
                )
            }
        }
        return buffer.freeze(isOpaque: true)
    }
}

#endif

#if HEIF
import CHeif

extension HDRTests {
    func testHEICWithPQNclxIsToneMappedLikeTheReference() throws {
        // A 10-bit HEIC whose nclx says PQ / BT.2020: libheif's own decode of it at 10 bits, tone
        // mapped by the reference, is what ImageKit's decode should show.
        let width = 64, height = 16
        var samples: [UInt16] = []
        for y in 0..<height {
            for x in 0..<width {
                let level = UInt16(min(1023, x * 16))
                samples += y < 8 ? [level, level, level] : [level, UInt16(x * 4), 0]
            }
        }
        let data = try Self.heic10(samples, width: width, height: height, transfer: 16)
        let decoded = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(decoded.hdrTransfer, .pq)
        let stored = try Self.libheifSamples(data)
        let reference = try HDRReference.toneMap(
            stored, width: width, height: height, maxCode: 1023, transfer: .pq, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(decoded.bitmap, reference), 45)
        let sdr = try ImageCodersManager.shared.decode(
            try Self.heic10(samples, width: width, height: height, transfer: 1))
        XCTAssertNil(sdr.hdrTransfer)
    }

    static func heic10(_ rgb: [UInt16], width: Int, height: Int, transfer: UInt16) throws -> Data {
        let nclx = try XCTUnwrap(heif_nclx_color_profile_alloc())
        defer { heif_nclx_color_profile_free(nclx) }
        heif_nclx_color_profile_set_color_primaries(nclx, 9)
        heif_nclx_color_profile_set_transfer_characteristics(nclx, transfer)
        heif_nclx_color_profile_set_matrix_coefficients(nclx, 9)
        nclx.pointee.full_range_flag = 1
        return try HEICWriter.write(
            width: width, height: height, bitDepth: 10, quality: 100,
            fill: { row, y in
                let words = row.assumingMemoryBound(to: UInt16.self)
                for index in 0..<width * 3 { words[index] = rgb[y * width * 3 + index] }
            },
            prepare: { picture, options in
                XCTAssertEqual(heif_image_set_nclx_color_profile(picture, nclx).code, heif_error_Ok)
                options.pointee.output_nclx_profile = nclx
                options.pointee.macOS_compatibility_workaround_no_nclx_profile = 0
            })
    }

    /// libheif's decode of `data` as 10-bit RGB samples.
    static func libheifSamples(_ data: Data) throws -> [UInt16] {
        let context = try XCTUnwrap(heif_context_alloc())
        defer { heif_context_free(context) }
        let read = data.withUnsafeBytes { heif_context_read_from_memory(context, $0.baseAddress, $0.count, nil) }
        XCTAssertEqual(read.code, heif_error_Ok)
        var handle: OpaquePointer?
        XCTAssertEqual(heif_context_get_primary_image_handle(context, &handle).code, heif_error_Ok)
        defer { heif_image_handle_release(handle) }
        var image: OpaquePointer?
        XCTAssertEqual(
            heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RRGGBB_LE, nil).code,
            heif_error_Ok)
        defer { heif_image_release(image) }
        let width = Int(heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image, heif_channel_interleaved))
        var stride: Int32 = 0
        let plane = try XCTUnwrap(heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride))
        var samples: [UInt16] = []
        for y in 0..<height {
            let row = UnsafeRawPointer(plane + y * Int(stride)).assumingMemoryBound(to: UInt16.self)
            samples += UnsafeBufferPointer(start: row, count: width * 3)
        }
        return samples
    }
}
#endif

#if JXL
import CJXL

extension HDRTests {
    func testJPEGXLWithAPQColourEncodingIsToneMapped() throws {
        // 16-bit samples from black to 10 000 cd/m², in gray and colours, tagged BT.2100 PQ.
        let width = 64, height = 8
        var samples: [UInt16] = []
        for y in 0..<height {
            for x in 0..<width {
                let level = UInt16(x * 1040)
                samples += y < 4 ? [level, level, level] : [level, UInt16(x * 300), UInt16(y * 2000)]
            }
        }
        let lossless = try Self.jxl(samples, width: width, height: height, transfer: JXL_TRANSFER_FUNCTION_PQ)
        let decoded = try ImageCodersManager.shared.decode(lossless)
        XCTAssertEqual(decoded.hdrTransfer, .pq)
        let reference = try HDRReference.toneMap(
            samples, width: width, height: height, maxCode: 65535, transfer: .pq, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(decoded.bitmap, reference), 45)
        // A lossy (XYB) file is rendered in its PQ encoding first, then mapped the same way.
        let lossy = try Self.jxl(
            samples, width: width, height: height, transfer: JXL_TRANSFER_FUNCTION_PQ, distance: 0.5)
        let lossyDecoded = try ImageCodersManager.shared.decode(lossy)
        XCTAssertEqual(lossyDecoded.hdrTransfer, .pq)
        XCTAssertGreaterThan(psnr(lossyDecoded.bitmap, reference), 30)
        let hlg = try ImageCodersManager.shared.decode(
            try Self.jxl(samples, width: width, height: height, transfer: JXL_TRANSFER_FUNCTION_HLG))
        XCTAssertEqual(hlg.hdrTransfer, .hlg)
        let hlgReference = try HDRReference.toneMap(
            samples, width: width, height: height, maxCode: 65535, transfer: .hlg, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(hlg.bitmap, hlgReference), 45)
    }

    func testLibjxlsPQGradientMatchesTheReference() throws {
        // libjxl's testdata: 1088 × 64, 16-bit gray, PQ, intensity target 10 000 (libjxl's default
        // for PQ, so the default 1000 cd/m² peak applies).
        let data = try fixture("pq_gradient.jxl")
        let decoded = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(decoded.hdrTransfer, .pq)
        XCTAssertEqual(decoded.bitmap.size, PixelSize(width: 1088, height: 64))
        let (gray, width, height) = try Self.libjxlSamples(data)
        let rgb = gray.flatMap { [$0, $0, $0] }
        let reference = try HDRReference.toneMap(
            rgb, width: width, height: height, maxCode: 65535, transfer: .pq, primaries: .bt2020)
        XCTAssertGreaterThan(psnr(decoded.bitmap, reference), 45)
        // A gradient: left to right never darker.
        let row = (0..<width).map { decoded.bitmap[$0, 32].r }
        XCTAssertEqual(row, row.sorted())
    }

    /// libjxl's decode of a gray file as its 16-bit samples.
    static func libjxlSamples(_ data: Data) throws -> ([UInt16], Int, Int) {
        let decoder = try XCTUnwrap(JxlDecoderCreate(nil))
        defer { JxlDecoderDestroy(decoder) }
        XCTAssertEqual(
            JxlDecoderSubscribeEvents(decoder, Int32(JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_FULL_IMAGE.rawValue)),
            JXL_DEC_SUCCESS)
        var info = JxlBasicInfo()
        var samples: [UInt16] = []
        var format = JxlPixelFormat(
            num_channels: 1, data_type: JXL_TYPE_UINT16, endianness: JXL_NATIVE_ENDIAN, align: 0)
        try data.withUnsafeBytes { bytes in
            XCTAssertEqual(
                JxlDecoderSetInput(decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count),
                JXL_DEC_SUCCESS)
            JxlDecoderCloseInput(decoder)
            loop: while true {
                switch JxlDecoderProcessInput(decoder) {
                case JXL_DEC_BASIC_INFO:
                    XCTAssertEqual(JxlDecoderGetBasicInfo(decoder, &info), JXL_DEC_SUCCESS)
                    samples = [UInt16](repeating: 0, count: Int(info.xsize * info.ysize))
                case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                    let status = samples.withUnsafeMutableBytes {
                        JxlDecoderSetImageOutBuffer(decoder, &format, $0.baseAddress, $0.count)
                    }
                    XCTAssertEqual(status, JXL_DEC_SUCCESS)
                case JXL_DEC_FULL_IMAGE: continue
                case JXL_DEC_SUCCESS: break loop
                default: throw ImageError(.badImageData, "libjxl could not decode the test file")
                }
            }
        }
        return (samples, Int(info.xsize), Int(info.ysize))
    }

    /// A JPEG XL of 16-bit RGB samples in BT.2020 with `transfer`: lossless, or lossy at `distance`.
    static func jxl(
        _ rgb: [UInt16], width: Int, height: Int, transfer: JxlTransferFunction, distance: Float? = nil
    ) throws -> Data {
        let encoder = try XCTUnwrap(JxlEncoderCreate(nil))
        defer { JxlEncoderDestroy(encoder) }
        var info = JxlBasicInfo()
        JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(width)
        info.ysize = UInt32(height)
        info.bits_per_sample = 16
        info.num_color_channels = 3
        info.uses_original_profile = distance == nil ? 1 : 0
        info.intensity_target = 1000
        XCTAssertEqual(JxlEncoderSetBasicInfo(encoder, &info), JXL_ENC_SUCCESS)
        var encoding = JxlColorEncoding()
        JxlColorEncodingSetToLinearSRGB(&encoding, 0)
        encoding.primaries = JXL_PRIMARIES_2100
        encoding.transfer_function = transfer
        encoding.rendering_intent = JXL_RENDERING_INTENT_RELATIVE
        XCTAssertEqual(JxlEncoderSetColorEncoding(encoder, &encoding), JXL_ENC_SUCCESS)
        let settings = try XCTUnwrap(JxlEncoderFrameSettingsCreate(encoder, nil))
        if let distance {
            XCTAssertEqual(JxlEncoderSetFrameDistance(settings, distance), JXL_ENC_SUCCESS)
        } else {
            XCTAssertEqual(JxlEncoderSetFrameLossless(settings, 1), JXL_ENC_SUCCESS)
        }
        var format = JxlPixelFormat(
            num_channels: 3, data_type: JXL_TYPE_UINT16, endianness: JXL_NATIVE_ENDIAN, align: 0)
        let added = rgb.withUnsafeBytes { JxlEncoderAddImageFrame(settings, &format, $0.baseAddress, $0.count) }
        XCTAssertEqual(added, JXL_ENC_SUCCESS)
        JxlEncoderCloseInput(encoder)
        var output = [UInt8](repeating: 0, count: 1 << 20)
        var next: UnsafeMutablePointer<UInt8>? = nil
        var available = 0
        let status = output.withUnsafeMutableBufferPointer { buffer -> JxlEncoderStatus in
            next = buffer.baseAddress
            available = buffer.count
            return JxlEncoderProcessOutput(encoder, &next, &available)
        }
        XCTAssertEqual(status, JXL_ENC_SUCCESS)
        return Data(output.prefix(output.count - available))
    }
}
#endif
