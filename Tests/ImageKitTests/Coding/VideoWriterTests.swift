import Foundation
import XCTest

@testable import ImageKit

/// Animations written as video, read back by Debian's `ffprobe` and `ffmpeg` (not by ImageKit's
/// own reader alone): codec, frame count, each frame's start and length, the pixels of each frame.
final class VideoWriterTests: XCTestCase {
    static let directory = TemporaryDirectory("imagekit-video-writer")

    override class func tearDown() { directory.remove() }

    override func setUp() async throws {
        try XCTSkipUnless(VideoWriter.isSupported, "the Video trait is off")
    }

    /// Five frames of different flat colours with a gradient stripe, shown 100, 200, 40, 300 and 60 ms.
    static func animation(width: Int = 96, height: Int = 64, alpha: UInt8 = 255) throws -> DecodedImage {
        let colours: [(UInt8, UInt8, UInt8)] = [
            (220, 30, 30), (30, 200, 40), (40, 60, 230), (240, 220, 20), (20, 20, 20),
        ]
        let durations = [0.1, 0.2, 0.04, 0.3, 0.06]
        var frames: [ImageFrame] = []
        for (index, colour) in colours.enumerated() {
            let buffer = try PixelBuffer(width: width, height: height)
            for y in 0..<height {
                let row = buffer.row(y)
                for x in 0..<width {
                    let stripe = y < height / 4
                    row[x * 4] = stripe ? UInt8(x * 255 / max(1, width - 1)) : colour.0
                    row[x * 4 + 1] = stripe ? UInt8(x * 255 / max(1, width - 1)) : colour.1
                    row[x * 4 + 2] = stripe ? UInt8(x * 255 / max(1, width - 1)) : colour.2
                    row[x * 4 + 3] = alpha
                }
            }
            frames.append(ImageFrame(bitmap: buffer.freeze(isOpaque: alpha == 255), duration: durations[index]))
        }
        return DecodedImage(frames: frames, format: .gif)
    }

    static func write(_ data: Data, _ name: String) throws -> URL {
        let url = directory.url.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    /// ffprobe's packet start times of the first video stream, in milliseconds, in time order.
    static func packetStarts(_ url: URL) throws -> [Double] {
        let csv = try VideoFrameSourceTests.ffmpeg(
            ["-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", url.path], tool: "ffprobe")
        return String(decoding: csv, as: UTF8.self).split(separator: "\n").compactMap { Double($0) }
            .map { ($0 * 1000).rounded() }.sorted()
    }

    /// ffprobe's duration of the file, in milliseconds.
    static func duration(_ url: URL) throws -> Double {
        let text = try VideoFrameSourceTests.ffmpeg(
            ["-show_entries", "format=duration", "-of", "csv=p=0", url.path], tool: "ffprobe")
        return
            ((Double(String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0)
            * 1000).rounded()
    }

    static func codec(_ url: URL) throws -> String {
        let text = try VideoFrameSourceTests.ffmpeg(
            [
                "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height,pix_fmt", "-of", "csv=p=0",
                url.path,
            ], tool: "ffprobe")
        return String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testAGIFsFramesAndTimingSurviveAsMP4AndWebM() throws {
        let animation = try Self.animation()
        for (format, codec) in [(VideoWriter.Format.mp4, "h264"), (.webm, "vp9")] {
            let data = try VideoWriter.encode(animation, as: format)
            let url = try Self.write(data, "five.\(format.rawValue)")
            XCTAssertEqual(try Self.codec(url), "\(codec),96,64,yuv420p")
            XCTAssertEqual(
                try Self.packetStarts(url), [0, 100, 300, 340, 640],
                "\(format): a packet a frame, each at the GIF's time")
            XCTAssertEqual(try Self.duration(url), 700, "\(format): the last frame shows for its own 60 ms")
            // Each frame decoded back by ffmpeg is the frame given (4:2:0 and the codec's loss aside).
            let raw = try VideoFrameSourceTests.ffmpeg(
                ["-i", url.path, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgba", "-"])
            XCTAssertEqual(raw.count, 5 * 96 * 64 * 4)
            for index in 0..<5 {
                let frame = [UInt8](raw[(index * 96 * 64 * 4)..<((index + 1) * 96 * 64 * 4)])
                let difference = VideoFrameSourceTests.meanDifference(animation.frames[index].bitmap, frame)
                XCTAssertLessThan(difference, 6, "\(format) frame \(index)")
            }
        }
    }

    func testAnMP4HasItsIndexBeforeItsMediaData() throws {
        let data = try VideoWriter.encode(Self.animation(), as: .mp4)
        var boxes: [String] = []
        var offset = 0
        while offset + 8 <= data.count {
            let size = data[(data.startIndex + offset)..<(data.startIndex + offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            boxes.append(
                String(decoding: data[(data.startIndex + offset + 4)..<(data.startIndex + offset + 8)], as: UTF8.self))
            guard size >= 8 else { break }
            offset += size
        }
        XCTAssertEqual(offset, data.count, "the boxes cover the file: \(boxes)")
        let moov = try XCTUnwrap(boxes.firstIndex(of: "moov")), mdat = try XCTUnwrap(boxes.firstIndex(of: "mdat"))
        XCTAssertLessThan(moov, mdat, "faststart: \(boxes)")
    }

    func testOddSidesBecomeEvenAndTransparencyWhite() throws {
        let animation = try Self.animation(width: 33, height: 1, alpha: 0)
        let url = try Self.write(VideoWriter.encode(animation, as: .mp4), "odd.mp4")
        XCTAssertEqual(try Self.codec(url), "h264,32,2,yuv420p")
        let raw = try VideoFrameSourceTests.ffmpeg([
            "-i", url.path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-",
        ])
        XCTAssertEqual(raw.count, 64)
        XCTAssertGreaterThan(raw.map(Int.init).min() ?? 0, 240, "transparent pixels are white")
    }

    func testAStillIsAOneSecondVideoAndImageKitReadsItBack() throws {
        let still = try DecodedImage(frames: [ImageFrame(bitmap: Self.animation().frames[2].bitmap)], format: .png)
        let data = try VideoWriter.encode(still, as: .webm)
        XCTAssertEqual(try Self.duration(Self.write(data, "still.webm")), 1000)
        let video = try VideoFrameSource(data: data)
        XCTAssertEqual(video.info.codec, "vp9")
        XCTAssertEqual(video.info.duration, 1, accuracy: 0.05)
        let frame = try video.frame(at: 0.5)
        XCTAssertEqual(frame.bitmap[50, 50].b, 230, accuracy: 8)
    }

    func testDelaysUnder11msShowFor100msAsBrowsersPlayThem() {
        XCTAssertEqual(VideoWriter.showing(0, isStill: false), 0.1)
        XCTAssertEqual(VideoWriter.showing(0.01, isStill: false), 0.1)
        XCTAssertEqual(VideoWriter.showing(0.02, isStill: false), 0.02)
        XCTAssertEqual(VideoWriter.showing(0, isStill: true), 1)
        XCTAssertEqual(VideoWriter.showing(.nan, isStill: false), 0.1)
    }

    /// Starts come from the exact running time: 30 frames of 1/30 s end at 1 s, not 0.99.
    func testThirtyFramesASecondStayThirty() throws {
        let frame = try Self.animation().frames[0].bitmap
        let image = DecodedImage(
            frames: Array(repeating: ImageFrame(bitmap: frame, duration: 1.0 / 30), count: 30), format: .gif)
        let url = try Self.write(VideoWriter.encode(image, as: .mp4), "thirty.mp4")
        XCTAssertEqual(try Self.duration(url), 1000)
        XCTAssertEqual(try Self.packetStarts(url)[1...3], [33, 67, 100])
    }
}
