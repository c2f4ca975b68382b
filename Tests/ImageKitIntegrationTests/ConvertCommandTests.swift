import Foundation
import XCTest

@testable import ImageKit

/// `imagekit convert` between the animated formats (issue 12, item 4): GIF, APNG and animated
/// WebP turn into each other with their frames, durations and loop count.
final class ConvertCommandTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    func testAnimationsConvertBetweenGIFAPNGAndWebP() throws {
        // Few colours, so the GIF leg is lossless too.
        let colours: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 160, 0), (0, 0, 255), (250, 250, 0)]
        let frames = try colours.enumerated().map { index, colour in
            var buffer = try PixelBuffer(width: 24, height: 16)
            for y in 0..<16 {
                for x in 0..<24 {
                    let pixel = buffer.row(y) + 4 * x
                    let inside = x >= index * 4 && x < index * 4 + 8
                    pixel[0] = inside ? colour.0 : 20; pixel[1] = inside ? colour.1 : 20
                    pixel[2] = inside ? colour.2 : 20; pixel[3] = 255
                }
            }
            return ImageFrame(bitmap: buffer.freeze(isOpaque: true), duration: [0.05, 0.2, 0.07, 1.5][index])
        }
        let source = directory.appendingPathComponent("in.gif")
        try ImageCodersManager.shared.encode(
            DecodedImage(frames: frames, loopCount: 3, format: .gif), as: .gif, options: .default
        )
        .write(to: source)

        var input = source
        for ext in ["png", "webp", "gif", "webp", "png"] {
            let output = directory.appendingPathComponent("out-\(ext)-\(UUID().uuidString.prefix(4)).\(ext)")
            let (status, text) = try ImageKitTool.run(["convert", input.path, output.path, "--lossless"])
            XCTAssertEqual(status, 0, "\(input.lastPathComponent) → \(ext)")
            XCTAssertTrue(text.contains("4 frame(s)"), text)
            let decoded = try ImageCodersManager.shared.decode(try Data(contentsOf: output))
            XCTAssertEqual(decoded.format, ["png": .png, "gif": .gif, "webp": .webp][ext])
            XCTAssertEqual(decoded.frames.count, 4, ext)
            XCTAssertEqual(decoded.loopCount, 3, ext)
            for (index, frame) in decoded.frames.enumerated() {
                XCTAssertEqual(frame.duration, frames[index].duration, accuracy: 0.001, "\(ext) frame \(index)")
                XCTAssertEqual(
                    frame.bitmap.canonicalSHA256(), frames[index].bitmap.canonicalSHA256(), "\(ext) frame \(index)")
            }
            input = output
        }
    }

    func testConvertWritesJPEGXLAndHEIC() throws {
        var extensions: [(String, ImageFormat)] = []
        #if JXL
        extensions.append(("jxl", .jpegXL))
        #endif
        #if HEIF
        extensions.append(("heic", .heic))
        #endif
        guard !extensions.isEmpty else { throw XCTSkip("built without the JXL and HEIF traits") }
        let source = directory.appendingPathComponent("in.png")
        let image = DecodedImage(
            frames: [ImageFrame(bitmap: try PixelBuffer(width: 40, height: 30).freeze(isOpaque: true))], format: .png)
        try ImageCodersManager.shared.encode(image, as: .png, options: .default).write(to: source)
        for (ext, format) in extensions {
            let output = directory.appendingPathComponent("out.\(ext)")
            let (status, text) = try ImageKitTool.run([
                "convert", source.path, output.path, "--quality", "80", "--speed", "9",
            ])
            XCTAssertEqual(status, 0, text)
            XCTAssertTrue(text.contains("\(format) 40x30, 1 frame(s)"), text)
            let decoded = try ImageCodersManager.shared.decode(try Data(contentsOf: output))
            XCTAssertEqual(decoded.format, format)
            XCTAssertEqual(decoded.bitmap.size, PixelSize(width: 40, height: 30))
        }
    }
}
