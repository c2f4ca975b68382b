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

    func testConvertWritesAGIFAsMP4AndWebM() throws {
        try XCTSkipUnless(VideoWriter.isSupported, "the Video trait is off")
        let frames = try [(250, 20, 20), (20, 200, 20), (20, 20, 250)].map { colour in
            let buffer = try PixelBuffer(width: 33, height: 21)
            buffer.fill(
                with: RGBAColor(red: UInt8(colour.0), green: UInt8(colour.1), blue: UInt8(colour.2), alpha: 255))
            return ImageFrame(bitmap: buffer.freeze(isOpaque: true), duration: 0.25)
        }
        let source = directory.appendingPathComponent("in.gif")
        try ImageCodersManager.shared.encode(DecodedImage(frames: frames, format: .gif), as: .gif, options: .default)
            .write(to: source)
        for (ext, codec) in [("mp4", "h264"), ("webm", "vp9")] {
            let output = directory.appendingPathComponent("out.\(ext)")
            let (status, text) = try ImageKitTool.run(["convert", source.path, output.path, "--quality", "80"])
            XCTAssertEqual(status, 0, text)
            XCTAssertTrue(text.contains("\(ext) 33x21, 3 frame(s)"), text)
            let video = try VideoFrameSource(data: Data(contentsOf: output))
            XCTAssertEqual(video.info.codec, codec)
            XCTAssertEqual(video.info.codedSize, PixelSize(width: 32, height: 20))
            XCTAssertEqual(video.info.duration, 0.75, accuracy: 0.01)
            XCTAssertEqual(Int(try video.frame(at: 0.6).bitmap[10, 10].b), 250, accuracy: 12)
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
