import Foundation
import XCTest

@testable import ImageKit

/// The one-shot PNG path (`ik_png_fast.c`): libpng's pixels, byte for byte, on every file it
/// takes; libpng's answer on every file it leaves (issue 18).
final class PNGFastPathTests: XCTestCase {
    typealias Outcome = Result<Bitmap, ImageError>

    func libpng(_ data: Data) -> Outcome {
        Result { () throws(ImageError) in
            try data.withImageBytes { bytes throws(ImageError) in
                try PNGCoder.decodeStill(bytes, limits: .default, ignoreCRC: false, usesFastPath: false)
            }
        }
    }

    /// libpng alone, without the checks `decodeStill` makes before either path.
    func rawLibpng(_ data: Data) -> Outcome {
        Result { () throws(ImageError) in
            try data.withImageBytes { bytes throws(ImageError) in
                try PNGCoder.decodeStillWithLibpng(bytes, limits: .default, ignoreCRC: false)
            }
        }
    }

    /// The fast path alone: nil when it leaves the file to libpng.
    func fast(_ data: Data) -> Outcome? {
        do {
            return try data.withImageBytes { bytes throws(ImageError) in
                try PNGCoder.decodeStillFast(bytes, limits: .default, checksCRC: true)
            }.map { .success($0) }
        } catch {
            return .failure(error)
        }
    }

    /// What `PNGCoder` answers (fast path, else libpng).
    func coder(_ data: Data) -> Outcome {
        Result { () throws(ImageError) in try PNGCoder().decode(data).bitmap }
    }

    func assertSame(_ a: Outcome, _ b: Outcome, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        switch (a, b) {
        case (.success(let x), .success(let y)):
            XCTAssertTrue(samePixels(x, y), "\(what): pixels differ", file: file, line: line)
            XCTAssertEqual(x.isOpaque, y.isOpaque, "\(what): opacity flag", file: file, line: line)
        case (.failure(let x), .failure(let y)):
            XCTAssertEqual(x.code, y.code, "\(what): \(x) vs \(y)", file: file, line: line)
        default:
            XCTFail("\(what): \(a) vs \(b)", file: file, line: line)
        }
    }

    func testEveryCorpusPNGDecodesAsLibpngDoes() throws {
        let entries = try Corpus.requireEntries().filter { $0.path.hasSuffix(".png") }
        XCTAssertGreaterThan(entries.count, Corpus.minimum(150))
        var taken = 0
        for entry in entries {
            let data = try entry.data
            let reference = libpng(data)
            if let fast = fast(data) {
                if case .success = fast { taken += 1 }
                assertSame(fast, rawLibpng(data), entry.path)
            }
            // An APNG's full decode is its first animation frame, not libpng's default image.
            if !ImageSignature(data).isAnimated { assertSame(coder(data), reference, entry.path) }
        }
        // Everything clean goes the fast way; APNGs and damaged files go to libpng.
        XCTAssertGreaterThan(taken, entries.count * 3 / 4, "files taken by the fast path: \(taken) of \(entries.count)")
        print("PNG fast path: \(taken) of \(entries.count) corpus PNGs")
    }

    func testEveryColourTypeAndDepthRoundTripsAndMatchesLibpng() throws {
        // Every IHDR combination, interlaced or not, with tRNS where it applies, built from raw rows.
        let combinations: [(colour: UInt8, depths: [UInt8])] = [
            (0, [1, 2, 4, 8, 16]), (2, [8, 16]), (3, [1, 2, 4, 8]), (4, [8, 16]), (6, [8, 16]),
        ]
        var generator = SplitMix(seed: 42)
        for (colour, depths) in combinations {
            for depth in depths {
                for interlaced in [false, true] {
                    for withTRNS in colour == 4 || colour == 6 ? [false] : [false, true] {
                        for filter: UInt8 in [0, 1, 2, 3, 4, 5] where !(interlaced && filter == 5) {
                            let png = PNGBuilder.random(
                                width: 13, height: 11, colour: colour, depth: depth, interlaced: interlaced,
                                trns: withTRNS, filter: filter, generator: &generator)
                            let what =
                                "colour \(colour) depth \(depth) interlaced \(interlaced) tRNS \(withTRNS) filter \(filter)"
                            let reference = libpng(png)
                            if let fast = fast(png) { assertSame(fast, rawLibpng(png), what) }
                            assertSame(coder(png), reference, what)
                            XCTAssertNotNil(fast(png), "\(what): the fast path takes clean files")
                        }
                    }
                }
            }
        }
    }

    func testCraftedDamageGetsLibpngsAnswer() throws {
        var generator = SplitMix(seed: 7)
        let rows = PNGBuilder.rawRows(width: 20, height: 10, bytesPerRow: 60, filter: 4, generator: &generator)
        let ihdr = PNGBuilder.ihdr(width: 20, height: 10, depth: 8, colour: 2, interlaced: false)
        let stream = PNGBuilder.zlibStored(rows)
        var cases: [(String, Data)] = []
        cases.append(("clean", PNGBuilder.file([ihdr, HostileImages.chunk("IDAT", stream)])))
        var badCRC = HostileImages.chunk("IDAT", stream)
        badCRC[badCRC.count - 1] ^= 0xFF
        cases.append(("bad IDAT CRC", PNGBuilder.file([ihdr, badCRC])))
        cases.append(
            (
                "IDAT too short",
                PNGBuilder.file([ihdr, HostileImages.chunk("IDAT", PNGBuilder.zlibStored(Array(rows.dropLast(30))))])
            ))
        cases.append(
            (
                "IDAT too long",
                PNGBuilder.file([ihdr, HostileImages.chunk("IDAT", PNGBuilder.zlibStored(rows + [0, 1, 2, 3, 4, 5]))])
            ))
        cases.append(
            ("zlib stream cut", PNGBuilder.file([ihdr, HostileImages.chunk("IDAT", Array(stream.dropLast(40)))])))
        cases.append(
            (
                "zero-length IDAT first",
                PNGBuilder.file([ihdr, HostileImages.chunk("IDAT", []), HostileImages.chunk("IDAT", stream)])
            ))
        let pieces = stride(from: 0, to: stream.count, by: 7).map {
            HostileImages.chunk("IDAT", Array(stream[$0..<min($0 + 7, stream.count)]))
        }
        cases.append(("IDAT in many chunks", PNGBuilder.file([ihdr] + pieces)))
        cases.append(
            (
                "unknown chunk between IDATs",
                PNGBuilder.file([ihdr, pieces[0], HostileImages.chunk("zzZz", [1, 2])] + pieces.dropFirst())
            ))
        cases.append(
            (
                "unknown critical chunk",
                PNGBuilder.file([ihdr, HostileImages.chunk("ZZZZ", [1]), HostileImages.chunk("IDAT", stream)])
            ))
        var badFilter = rows
        badFilter[61 * 3] = 9
        cases.append(
            ("filter type 9", PNGBuilder.file([ihdr, HostileImages.chunk("IDAT", PNGBuilder.zlibStored(badFilter))])))
        var noIEND = [UInt8](PNGBuilder.file([ihdr, HostileImages.chunk("IDAT", stream)]))
        noIEND.removeLast(12)
        cases.append(("no IEND", Data(noIEND)))
        // Palette of 3 entries, indices up to 255.
        let paletteRows = PNGBuilder.rawRows(width: 16, height: 4, bytesPerRow: 16, filter: 0, generator: &generator)
        cases.append(
            (
                "palette index out of range",
                PNGBuilder.file([
                    PNGBuilder.ihdr(width: 16, height: 4, depth: 8, colour: 3, interlaced: false),
                    HostileImages.chunk("PLTE", [255, 0, 0, 0, 255, 0, 0, 0, 255]), HostileImages.chunk("tRNS", [128]),
                    HostileImages.chunk("IDAT", PNGBuilder.zlibStored(paletteRows)),
                ])
            ))
        cases.append(
            (
                "tRNS longer than the palette",
                PNGBuilder.file([
                    PNGBuilder.ihdr(width: 16, height: 4, depth: 8, colour: 3, interlaced: false),
                    HostileImages.chunk("PLTE", [255, 0, 0, 0, 255, 0]), HostileImages.chunk("tRNS", [1, 2, 3, 4]),
                    HostileImages.chunk("IDAT", PNGBuilder.zlibStored(paletteRows)),
                ])
            ))
        for (name, data) in cases {
            let reference = libpng(data)
            if let fast = fast(data) { assertSame(fast, rawLibpng(data), name) }
            assertSame(coder(data), reference, name)
        }
        XCTAssertNotNil(fast(cases[0].1), "the clean file goes the fast way")
        XCTAssertNotNil(fast(cases[6].1), "so does one whose IDAT is split")
        XCTAssertNil(fast(cases[1].1), "a CRC mismatch goes to libpng")
    }

    /// An RGB file whose tRNS comes before its (suggested) PLTE: libpng 1.6.39 drops the tRNS
    /// but kept its flag, and the decode failed ("unexpected PNG row layout"); it is the opaque
    /// image libpng reads (libavif's test file circle-trns-before-plte.png).
    func testATRNSChunkBeforePLTEIsDroppedAsLibpngDoes() throws {
        var generator = SplitMix(seed: 11)
        let rows = PNGBuilder.rawRows(width: 16, height: 4, bytesPerRow: 48, filter: 0, generator: &generator)
        let ihdr = PNGBuilder.ihdr(width: 16, height: 4, depth: 8, colour: 2, interlaced: false)
        let idat = HostileImages.chunk("IDAT", PNGBuilder.zlibStored(rows))
        let misplaced = PNGBuilder.file([
            ihdr, HostileImages.chunk("tRNS", [0, 0, 0, 255, 0, 0]),
            HostileImages.chunk("PLTE", [0, 0, 0, 128, 128, 128]),
            idat,
        ])
        let plain = PNGBuilder.file([ihdr, idat])
        let image = try ImageCodersManager.shared.decode(misplaced)
        XCTAssertTrue(image.bitmap.isOpaque)
        XCTAssertEqual(image.bitmap.packedRGBA(), try ImageCodersManager.shared.decode(plain).bitmap.packedRGBA())
    }

    func testTheLibdeflateWriterIsReadByLibpngAtEveryLevel() throws {
        for (width, height) in [(1, 1), (7, 3), (64, 48), (301, 17)] {
            for alpha in [false, true] {
                let bitmap = TestImages.gradient(width: width, height: height, alpha: alpha, seed: width)
                for level in [0, 1, 6, 12] {
                    let png = try PNGCoder.encode(bitmap, keepAlpha: alpha, level: level)
                    let what = "\(width)×\(height) alpha \(alpha) level \(level)"
                    guard case .success(let decoded) = rawLibpng(png) else {
                        return XCTFail("\(what): libpng cannot read it")
                    }
                    XCTAssertTrue(samePixels(decoded, bitmap), what)
                    XCTAssertNotNil(fast(png), "\(what): the fast path reads it too")
                }
            }
        }
    }

    func testTheInflatedStreamCountsAgainstTheWorkingLimit() throws {
        var generator = SplitMix(seed: 3)
        let rows = PNGBuilder.rawRows(width: 300, height: 200, bytesPerRow: 1200, filter: 0, generator: &generator)
        let png = PNGBuilder.file([
            PNGBuilder.ihdr(width: 300, height: 200, depth: 8, colour: 6, interlaced: false),
            HostileImages.chunk("IDAT", PNGBuilder.zlibStored(rows)),
        ])
        var limits = DecodingLimits()
        limits.maxWorkingBytes = 1000
        // Output 240 000 bytes: up to 480 000 bytes of working memory are allowed whatever the limit.
        XCTAssertNoThrow(
            try png.withImageBytes { bytes throws(ImageError) in
                try PNGCoder.decodeStillFast(bytes, limits: limits, checksCRC: true)
            })
    }
}

/// PNG files built from raw scanlines (stored zlib blocks), for shapes no encoder writes.
enum PNGBuilder {
    static func ihdr(width: Int, height: Int, depth: UInt8, colour: UInt8, interlaced: Bool) -> [UInt8] {
        HostileImages.chunk(
            "IHDR",
            HostileImages.u32be(width) + HostileImages.u32be(height) + [depth, colour, 0, 0, interlaced ? 1 : 0])
    }

    static func file(_ chunks: [[UInt8]]) -> Data {
        Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunks.joined() + HostileImages.chunk("IEND", []))
    }

    /// A zlib stream of stored (uncompressed) blocks.
    static func zlibStored(_ raw: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65535, raw.count - offset)
            let final: UInt8 = offset + count == raw.count ? 1 : 0
            out += [final] + HostileImages.u16le(count) + HostileImages.u16le(~count & 0xFFFF)
            out += raw[offset..<offset + count]
            offset += count
        } while offset < raw.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        return out + HostileImages.u32be(Int(b << 16 | a))
    }

    /// `height` rows of random bytes, each after the filter byte `filter`.
    static func rawRows(width: Int, height: Int, bytesPerRow: Int, filter: UInt8, generator: inout SplitMix) -> [UInt8]
    {
        var rows: [UInt8] = []
        for _ in 0..<height {
            rows.append(filter)
            for _ in 0..<bytesPerRow { rows.append(UInt8(truncatingIfNeeded: generator.next())) }
        }
        return rows
    }

    /// A random image of the given IHDR (filter 5 = a mix of 0…4 per row), with a palette for
    /// colour type 3 and a tRNS chunk when asked.
    static func random(
        width: Int, height: Int, colour: UInt8, depth: UInt8, interlaced: Bool, trns: Bool, filter: UInt8,
        generator: inout SplitMix
    ) -> Data {
        let channels = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][Int(colour)]!
        let passes: [(Int, Int, Int, Int)] =
            interlaced
            ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
            : [(0, 0, 1, 1)]
        var raw: [UInt8] = []
        for (x0, y0, dx, dy) in passes {
            let passWidth = width > x0 ? (width - x0 + dx - 1) / dx : 0
            let passHeight = height > y0 ? (height - y0 + dy - 1) / dy : 0
            guard passWidth > 0, passHeight > 0 else { continue }
            let rowBytes = (passWidth * channels * Int(depth) + 7) / 8
            for _ in 0..<passHeight {
                raw.append(filter == 5 ? UInt8(generator.next() % 5) : filter)
                for _ in 0..<rowBytes { raw.append(UInt8(truncatingIfNeeded: generator.next())) }
            }
        }
        var chunks = [ihdr(width: width, height: height, depth: depth, colour: colour, interlaced: interlaced)]
        if colour == 3 {
            let entries = 1 << min(Int(depth), 8)
            chunks.append(
                HostileImages.chunk("PLTE", (0..<entries * 3).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
            if trns {
                chunks.append(
                    HostileImages.chunk(
                        "tRNS", (0..<entries / 2 + 1).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
            }
        } else if trns {
            let maximum = depth == 16 ? 65535 : (1 << Int(depth)) - 1
            let samples = (0..<(colour == 0 ? 1 : 3)).map { _ in Int(generator.next() % UInt64(maximum + 1)) }
            chunks.append(HostileImages.chunk("tRNS", samples.flatMap { HostileImages.u16be($0) }))
        }
        chunks.append(HostileImages.chunk("IDAT", zlibStored(raw)))
        return file(chunks)
    }
}

/// A small deterministic generator for test data.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
