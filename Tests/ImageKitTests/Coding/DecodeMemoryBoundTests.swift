import Foundation
import XCTest

@testable import ImageKit

/// Every decode path refuses headers that claim more memory than the limits allow, before it
/// allocates: crafted bombs of every format through one-shot, thumbnail, scale-down,
/// first-frame-only and progressive decoding; then, in a child process whose address space is
/// capped at 1 GiB, the CLI on the same files and on a legitimately large image.
final class DecodeMemoryBoundTests: XCTestCase {
    /// (name, bytes, the error every path must give).
    static let bombs: [(String, Data, ImageError.Code)] = [
        ("jpeg-progressive-64250", HostileImages.jpeg(marker: 0xC2, width: 64250, height: 64250), .decompressionBomb),
        ("jpeg-progressive-12000", HostileImages.jpeg(marker: 0xC2, width: 12000, height: 12000), .decompressionBomb),
        (
            "jpeg-multiscan-12000", HostileImages.jpeg(marker: 0xC0, width: 12000, height: 12000, scanComponents: 1),
            .decompressionBomb
        ),
        ("jpeg-baseline-60000", HostileImages.jpeg(marker: 0xC0, width: 60000, height: 60000), .decompressionBomb),
        ("png-100000", HostileImages.png(width: 100_000, height: 100_000), .decompressionBomb),
        ("png-interlaced-16000", HostileImages.png(width: 16000, height: 16000, interlaced: true), .decompressionBomb),
        ("apng-16000", HostileImages.png(width: 16000, height: 16000, animated: true), .decompressionBomb),
        ("gif-65535", HostileImages.gif(width: 65535, height: 65535), .decompressionBomb),
        ("webp-lossless-16383", HostileImages.webpLossless(width: 16383, height: 16383), .decompressionBomb),
        ("webp-animated-30000", HostileImages.webpAnimated(width: 30000, height: 30000), .decompressionBomb),
    ]

    static let paths: [(String, ImageDecodingOptions)] = [
        ("one-shot", .default),
        ("thumbnail", ImageDecodingOptions(thumbnailPixelSize: PixelSize(256))),
        ("scale-down", ImageDecodingOptions(scaleDownLimitBytes: DecodedImage.defaultScaleDownLimitBytes)),
        ("first-frame", ImageDecodingOptions(firstFrameOnly: true, thumbnailPixelSize: PixelSize(128))),
        ("keep-orientation", ImageDecodingOptions(appliesOrientation: false, thumbnailPixelSize: PixelSize(64))),
    ]

    func testBombsAreRefusedOnEveryPath() {
        for (name, data, expected) in Self.bombs {
            for (path, options) in Self.paths {
                let start = Date()
                do {
                    let image = try ImageCodersManager.shared.decode(data, options: options)
                    XCTFail("\(name) via \(path) decoded to \(image.width)×\(image.height)")
                } catch {
                    XCTAssertEqual(error.code, expected, "\(name) via \(path): \(error)")
                }
                // A hang guard, not a speed assertion: refusals come from the header.
                XCTAssertLessThan(Date().timeIntervalSince(start), 5, "\(name) via \(path)")
            }
        }
    }

    func testProgressiveDecoderRefusesBombs() {
        for (name, data, expected) in Self.bombs {
            let decoder = ProgressiveDecoder(options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(256)))
            decoder.update(data.prefix(data.count / 2), isFinal: false)
            XCTAssertNil(decoder.preview(), name)
            decoder.update(data, isFinal: true)
            XCTAssertThrowsError(try decoder.finalImage(), name) { error in
                XCTAssertEqual((error as? ImageError)?.code, expected, name)
            }
        }
    }

    /// A 7000×7000 GIF may be decoded whole (196 MB of output), but its thumbnail would hold two
    /// full-size canvases for 256 KB of output.
    func testThumbnailOfAHugeGIFCanvasIsRefused() throws {
        let data = HostileImages.gif(width: 7000, height: 7000)
        XCTAssertThrowsError(
            try ImageCodersManager.shared.decode(
                data, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(256)))
        ) {
            XCTAssertEqual(($0 as? ImageError)?.code, .decompressionBomb)
        }
        XCTAssertEqual(try ImageCodersManager.shared.decode(data).width, 7000)
    }

    func testTooShortSequentialJPEGIsTruncatedBeforeDecoding() {
        let data = HostileImages.jpeg(marker: 0xC0, width: 30000, height: 30000)
        XCTAssertThrowsError(
            try ImageCodersManager.shared.decode(
                data, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(256)))
        ) {
            XCTAssertEqual(($0 as? ImageError)?.code, .truncatedData)
        }
    }

    func testLegitimateLargeProgressiveThumbnailStaysAllowed() throws {
        // 6000×4000 progressive 4:2:0: 72 MB of coefficients, under the working budget.
        let bitmap = TestImages.gradient(width: 6000, height: 4000)
        let data = try ImageCodersManager.shared.encode(
            TestImages.still(bitmap, format: .jpeg), as: .jpeg,
            options: .init(quality: 0.8, progressive: true))
        let thumb = try ImageCodersManager.shared.decode(
            data, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(256)))
        XCTAssertEqual(thumb.width, 256)
    }

    // MARK: Under an address-space cap

    /// The `imagekit` tool built beside the test bundle.
    static var tool: URL? {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("imagekit")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }

    /// AddressSanitizer reserves terabytes of shadow memory: no address-space cap under it. The
    /// tests and the tool are built alike, so the tests' own runtime tells.
    static var underAddressSanitizer: Bool {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
    }

    /// Runs `imagekit arguments` with its address space capped at `kilobytes`; returns the exit
    /// status and what it printed (`info` reports errors on standard output).
    func runCapped(_ arguments: [String], kilobytes: Int = 1 << 20) throws -> (Int32, String) {
        let tool = try XCTUnwrap(Self.tool, "the imagekit tool is not built beside the tests")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -v \(kilobytes) && exec \"$0\" \"$@\"", tool.path] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = errors
        try process.run()
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    func testCLIUnderOneGiBAddressSpace() throws {
        if Self.underAddressSanitizer {
            throw XCTSkip("address-space caps do not apply under AddressSanitizer")
        }
        let directory = TemporaryDirectory("memory-bound")
        defer { directory.remove() }
        for (name, data, expected) in Self.bombs {
            let input = directory.url.appendingPathComponent(name)
            try data.write(to: input)
            for arguments in [
                ["info", input.path], ["thumbnail", input.path, directory.path + "/out.png", "--size", "256"],
            ] {
                let (status, errors) = try runCapped(arguments)
                XCTAssertEqual(status, 1, "\(name) \(arguments[0]): \(errors)")
                XCTAssertTrue(errors.contains(expected.rawValue), "\(name) \(arguments[0]): \(errors)")
            }
        }
        // A legitimate large image still decodes under the same cap (baseline 8000×6000: the
        // thumbnail streams; the full decode is 192 MB).
        let large = directory.url.appendingPathComponent("large.jpg")
        try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 8000, height: 6000), format: .jpeg),
            as: .jpeg, options: .init(quality: 0.8)
        ).write(to: large)
        let (thumbStatus, thumbErrors) = try runCapped([
            "thumbnail", large.path, directory.path + "/thumb.png", "--size", "256",
        ])
        XCTAssertEqual(thumbStatus, 0, thumbErrors)
        let (infoStatus, infoErrors) = try runCapped(["info", large.path])
        XCTAssertEqual(infoStatus, 0, infoErrors)
    }

    /// `imagekit info` reports a long animation from its first frame and headers: 400 frames of
    /// 1000×1000 would be 1.6 GB decoded whole (over the decode limits), and the address space is
    /// capped at 1 GiB.
    func testInfoReportsALongAnimationFromItsHeaders() throws {
        if Self.underAddressSanitizer {
            throw XCTSkip("address-space caps do not apply under AddressSanitizer")
        }
        let directory = TemporaryDirectory("long-animation")
        defer { directory.remove() }
        let input = directory.url.appendingPathComponent("long.gif")
        try HostileImages.gifAnimation(width: 1000, height: 1000, frames: 400).write(to: input)
        let (status, output) = try runCapped(["info", "--json", input.path])
        XCTAssertEqual(status, 0, output)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], output)
        XCTAssertEqual(object["frames"] as? Int, 400)
        XCTAssertEqual(object["width"] as? Int, 1000)
        XCTAssertEqual(object["loopCount"] as? Int, 0)
        XCTAssertEqual((object["durations"] as? [Double])?.first, 0.04)
        XCTAssertGreaterThanOrEqual(object["cost"] as? Int ?? 0, 400 * 1000 * 4 * 1000)
        // Decoded whole, it is over the limits (what `info` did before, after allocating them).
        XCTAssertThrowsError(try ImageCodersManager.shared.decode(try Data(contentsOf: input)))
        let (pixelsStatus, pixelsOutput) = try runCapped(["info", "--pixels", input.path])
        XCTAssertEqual(pixelsStatus, 1, pixelsOutput)
        XCTAssertTrue(pixelsOutput.contains("decompressionBomb"), pixelsOutput)
    }
}
