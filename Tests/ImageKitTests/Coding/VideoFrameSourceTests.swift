import Foundation
import XCTest

@testable import ImageKit

/// Video frames against FFmpeg's own command-line tool: the sources are made by Debian's `ffmpeg`
/// (`make test-deps` installs it) from its test pattern, whose every frame differs, and a frame
/// must equal the one `ffmpeg` decodes at the same time, not merely have its size.
final class VideoFrameSourceTests: XCTestCase {
    static let directory = TemporaryDirectory("imagekit-video")

    override class func tearDown() { directory.remove() }

    /// `ffmpeg ARGUMENTS`; its standard output.
    @discardableResult
    static func ffmpeg(_ arguments: [String], tool: String = "ffmpeg") throws -> Data {
        let path = ["/usr/bin/\(tool)", "/usr/local/bin/\(tool)"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        let executable = try XCTUnwrap(path, "\(tool) is needed (make test-deps installs Debian's ffmpeg)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-hide_banner", "-loglevel", "error"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ImageError(
                .internalError, "\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
        return data
    }

    /// A video of ffmpeg's moving test pattern, made once per name.
    static func video(_ name: String, size: String = "320x240", seconds: Int = 4, codec: [String]) throws -> URL {
        let url = directory.url.appendingPathComponent(name)
        if !FileManager.default.fileExists(atPath: url.path) {
            try ffmpeg(
                ["-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25:duration=\(seconds)"] + codec + [url.path])
        }
        return url
    }

    static func h264() throws -> URL {
        try video("h264.mp4", codec: ["-c:v", "libx264", "-g", "25", "-bf", "2", "-pix_fmt", "yuv420p"])
    }

    /// The RGBA frame ffmpeg decodes at `seconds` (its accurate seek: the first frame at or after).
    static func ffmpegFrame(_ url: URL, at seconds: Double, size: PixelSize, filter: String? = nil) throws -> [UInt8] {
        var arguments = ["-ss", String(seconds), "-i", url.path, "-frames:v", "1"]
        if let filter { arguments += ["-vf", filter] }
        let data = try ffmpeg(arguments + ["-f", "rawvideo", "-pix_fmt", "rgba", "-"])
        XCTAssertEqual(data.count, size.width * size.height * 4, "ffmpeg's frame is \(size)")
        return [UInt8](data)
    }

    /// Mean absolute difference per channel between a bitmap and packed RGBA bytes.
    static func meanDifference(_ bitmap: Bitmap, _ rgba: [UInt8]) -> Double {
        var total = 0
        bitmap.withUnsafeBytes { raw in
            for y in 0..<bitmap.height {
                for x in 0..<bitmap.width * 4 {
                    total += abs(Int(raw[y * bitmap.bytesPerRow + x]) - Int(rgba[(y * bitmap.width) * 4 + x]))
                }
            }
        }
        return Double(total) / Double(bitmap.width * bitmap.height * 4)
    }

    override func setUp() async throws {
        try XCTSkipUnless(VideoFrameSource.isSupported, "the Video trait is off (testABuildWithoutTheTrait… covers it)")
    }

    func testTheStreamsFacts() throws {
        let video = try VideoFrameSource(data: Data(contentsOf: Self.h264()))
        XCTAssertEqual(video.info.codec, "h264")
        XCTAssertTrue(video.info.container.contains("mp4"), video.info.container)
        XCTAssertEqual(video.info.codedSize, PixelSize(width: 320, height: 240))
        XCTAssertEqual(video.info.displaySize, PixelSize(width: 320, height: 240))
        XCTAssertEqual(video.info.duration, 4, accuracy: 0.05)
        XCTAssertEqual(video.info.frameRate, 25, accuracy: 0.01)
        XCTAssertEqual(video.info.frameCount, 100)
        XCTAssertEqual(video.info.rotation, 0)
        XCTAssertFalse(video.info.isHDR)
    }

    /// HDR video is tone-mapped as HDR images are: a flat grey at SDR white's signal (203 cd/m²:
    /// PQ 0.58, HLG 0.75), made exactly (10-bit samples written by hand, encoded losslessly), comes
    /// out near white — converted as SDR it would be a mid grey (148 for PQ).
    func testHDRFramesAreToneMapped() throws {
        for (transfer, signal, trc) in [(HDRTransfer.pq, 0.5807, "smpte2084"), (.hlg, 0.75, "arib-std-b67")] {
            let luma = UInt16(64 + (876 * signal).rounded())
            var raw = Data()
            for _ in 0..<5 {
                for _ in 0..<(64 * 64) { raw.append(contentsOf: [UInt8(luma & 0xFF), UInt8(luma >> 8)]) }
                for _ in 0..<(2 * 32 * 32) { raw.append(contentsOf: [0x00, 0x02]) }  // 512: no chroma
            }
            let input = Self.directory.url.appendingPathComponent("grey-\(transfer).yuv")
            let output = Self.directory.url.appendingPathComponent("grey-\(transfer).mp4")
            try raw.write(to: input)
            try Self.ffmpeg([
                "-y", "-f", "rawvideo", "-pix_fmt", "yuv420p10le", "-s", "64x64", "-r", "25", "-i", input.path,
                "-c:v", "libx265", "-x265-params", "lossless=1:log-level=none", "-color_primaries", "bt2020",
                "-color_trc", trc, "-colorspace", "bt2020nc", "-tag:v", "hvc1", output.path,
            ])
            let video = try VideoFrameSource(data: Data(contentsOf: output))
            XCTAssertEqual(video.info.hdrTransfer, transfer)
            let pixel = try video.frame(at: 0).bitmap[32, 32]
            XCTAssertGreaterThan(pixel.g, 215, "\(transfer): SDR white's signal is near white, not \(pixel)")
            XCTAssertEqual(Int(pixel.r), Int(pixel.g), accuracy: 2, "\(transfer): grey stays grey")
            XCTAssertEqual(Int(pixel.b), Int(pixel.g), accuracy: 2, "\(transfer): grey stays grey")
        }
    }

    /// At a frame's own time the frame is ffmpeg's, and not its neighbours (the pattern moves).
    func testTheFrameAtATimeIsTheOneFFmpegDecodes() throws {
        let url = try Self.h264()
        let video = try VideoFrameSource(data: Data(contentsOf: url))
        let size = PixelSize(width: 320, height: 240)
        for seconds in [0.0, 1.0, 2.04, 3.2] {
            let frame = try video.frame(at: seconds)
            XCTAssertEqual(frame.time, seconds, accuracy: 0.001)
            XCTAssertEqual(PixelSize(width: frame.bitmap.width, height: frame.bitmap.height), size)
            let same = Self.meanDifference(frame.bitmap, try Self.ffmpegFrame(url, at: seconds, size: size))
            let next = Self.meanDifference(frame.bitmap, try Self.ffmpegFrame(url, at: seconds + 0.04, size: size))
            XCTAssertLessThan(same, 1.0, "\(seconds) s: ffmpeg's frame")
            XCTAssertGreaterThan(next, same * 4 + 1, "\(seconds) s: not the next frame")
        }
        // Between two frames' times, the one on screen: the earlier.
        let between = try video.frame(at: 2.05)
        XCTAssertEqual(between.time, 2.04, accuracy: 0.001)
    }

    /// swscale stores whole vectors, past a row's end when the row is not a multiple of them: a
    /// frame of an odd width must still not reach past its last row (heap corruption that glibc
    /// caught only later, on another free, before the rows went through a padded scratch).
    func testFramesOfAnyWidthStayInsideTheirBitmap() throws {
        let video = try VideoFrameSource(data: Data(contentsOf: Self.h264()))
        let reference = try video.frame(at: 1).bitmap
        for width in [1, 2, 3, 30, 33, 60, 100, 120, 127, 200, 319] {
            let frame = try video.frame(at: 1, fitting: PixelSize(width: width, height: 240)).bitmap
            XCTAssertEqual(frame.width, width)
            guard width >= 60 else { continue }  // a busy pattern shrunk to a few pixels: sizes only
            let shrunk = try reference.resized(to: PixelSize(width: frame.width, height: frame.height))
            XCTAssertLessThan(Self.meanDifference(frame, Self.packed(shrunk)), 12, "\(width) px wide")
        }
    }

    /// Frames asked in order (a sprite's tiles, a preview's frames) are reached by decoding on
    /// from the last one, not by seeking back to the key frame each time: every frame of the
    /// video once, and each the one ffmpeg decodes at its time; an earlier time seeks again.
    func testFramesInOrderAreDecodedOnce() throws {
        let url = try Self.h264()
        let video = try VideoFrameSource(data: Data(contentsOf: url))
        var decoded = 0
        for index in 0..<100 {
            let seconds = Double(index) * 0.04
            let frame = try video.frame(at: seconds)
            XCTAssertEqual(frame.time, seconds, accuracy: 0.001)
            decoded += video.framesDecoded
            if index == 37 || index == 80 {
                let size = PixelSize(width: 320, height: 240)
                XCTAssertLessThan(
                    Self.meanDifference(frame.bitmap, try Self.ffmpegFrame(url, at: seconds, size: size)), 1.0)
            }
        }
        XCTAssertLessThanOrEqual(decoded, 100, "each of the 100 frames decoded once at most")
        // The same time twice, and a time between two frames: the frame on screen, no decode back.
        XCTAssertEqual(try video.frame(at: 3.96).time, 3.96, accuracy: 0.001)
        XCTAssertEqual(try video.frame(at: 1.0).time, 1.0, accuracy: 0.001)
        XCTAssertEqual(try video.frame(at: 1.0).time, 1.0, accuracy: 0.001)
        XCTAssertEqual(try video.frame(at: 1.05).time, 1.04, accuracy: 0.001)
        XCTAssertLessThanOrEqual(video.framesDecoded, 1)
        XCTAssertEqual(try video.frame(at: 0.5).time, 0.48, accuracy: 0.001, "earlier: sought again")
    }

    /// Keyframe mode decodes one frame, the key frame at or before the time (a GOP of 25 frames:
    /// key frames every second); exact mode decodes forward from it, but for the frames nothing
    /// refers to that cannot be the one shown.
    func testKeyframeModeDecodesTheKeyFrameAlone() throws {
        let video = try VideoFrameSource(data: Data(contentsOf: Self.h264()))
        let key = try video.frame(at: 2.6, mode: .keyframe)
        XCTAssertEqual(key.time, 2.0, accuracy: 0.001)
        XCTAssertEqual(video.framesDecoded, 1)
        let exact = try video.frame(at: 2.6)
        XCTAssertEqual(exact.time, 2.6, accuracy: 0.001)
        // From the key frame at 2.0 s: 16 frames to 2.6 s, less the B-frames no frame refers to
        // (two B-frames between references: a third of them) that start before 2.52 s.
        XCTAssertGreaterThanOrEqual(video.framesDecoded, 8)
        XCTAssertLessThan(
            video.framesDecoded, 16, "decoded from the key frame before, its unreferenced B-frames skipped")
        let again = try video.frame(at: 2.0)
        XCTAssertEqual(Self.meanDifference(again.bitmap, Self.packed(key.bitmap)), 0, "the same key frame")
    }

    /// Scaled at conversion to fit a box, aspect kept, never enlarged; close to ffmpeg's own
    /// area-averaging scale of the same frame.
    func testAFrameFitsABox() throws {
        let url = try Self.h264()
        let video = try VideoFrameSource(data: Data(contentsOf: url))
        let small = try video.frame(at: 1, fitting: PixelSize(width: 160, height: 160))
        XCTAssertEqual(
            PixelSize(width: small.bitmap.width, height: small.bitmap.height), PixelSize(width: 160, height: 120))
        let reference = try Self.ffmpegFrame(
            url, at: 1, size: PixelSize(width: 160, height: 120), filter: "scale=160:120:flags=area")
        XCTAssertLessThan(Self.meanDifference(small.bitmap, reference), 2.0)
        let large = try video.frame(at: 1, fitting: PixelSize(width: 1000, height: 1000))
        XCTAssertEqual(large.bitmap.width, 320, "never enlarged")
    }

    /// A display matrix turns the frame upright, as ffmpeg's own autorotation does.
    func testTheDisplayMatrixTurnsTheFrameUpright() throws {
        let source = try Self.h264()
        let rotated = Self.directory.url.appendingPathComponent("rotated.mp4")
        try Self.ffmpeg(["-y", "-i", source.path, "-c", "copy", "-metadata:s:v:0", "rotate=90", rotated.path])
        let video = try VideoFrameSource(data: Data(contentsOf: rotated))
        // ffprobe's rotation is the display matrix's, counter-clockwise; ImageKit's is clockwise.
        let probed = try Self.ffmpeg(
            ["-select_streams", "v:0", "-show_entries", "side_data=rotation", "-of", "csv=p=0", rotated.path],
            tool: "ffprobe")
        let counterClockwise = try XCTUnwrap(
            Int(String(decoding: probed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertEqual(video.info.rotation, ((-counterClockwise % 360) + 360) % 360)
        XCTAssertTrue([90, 270].contains(video.info.rotation))
        XCTAssertEqual(video.info.codedSize, PixelSize(width: 320, height: 240))
        XCTAssertEqual(video.info.displaySize, PixelSize(width: 240, height: 320))
        let frame = try video.frame(at: 1)
        XCTAssertEqual(
            PixelSize(width: frame.bitmap.width, height: frame.bitmap.height), PixelSize(width: 240, height: 320))
        let reference = try Self.ffmpegFrame(rotated, at: 1, size: PixelSize(width: 240, height: 320))
        XCTAssertLessThan(Self.meanDifference(frame.bitmap, reference), 1.0)
    }

    /// Each codec the issue names, in its usual container.
    func testEachCodec() throws {
        let cases: [(String, [String], String)] = [
            ("vp8.webm", ["-c:v", "libvpx", "-b:v", "500k"], "vp8"),
            ("vp9.webm", ["-c:v", "libvpx-vp9", "-b:v", "500k", "-deadline", "realtime", "-cpu-used", "8"], "vp9"),
            ("hevc.mp4", ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error"], "hevc"),
            ("av1.mkv", ["-c:v", "libsvtav1", "-preset", "12"], "av1"),
            ("h264.mov", ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"], "h264"),
        ]
        let size = PixelSize(width: 160, height: 120)
        for (name, codec, expected) in cases {
            let url = try Self.video(name, size: "160x120", seconds: 2, codec: codec)
            let video = try VideoFrameSource(data: Data(contentsOf: url))
            XCTAssertEqual(video.info.codec, expected, name)
            XCTAssertEqual(video.info.codedSize, size, name)
            let frame = try video.frame(at: 1)
            XCTAssertEqual(frame.time, 1, accuracy: 0.001, name)
            XCTAssertLessThan(
                Self.meanDifference(frame.bitmap, try Self.ffmpegFrame(url, at: 1, size: size)), 1.0, name)
        }
    }

    /// Before the first frame: the first; past the end: the last.
    func testTimesOutsideTheVideo() throws {
        let video = try VideoFrameSource(data: Data(contentsOf: Self.h264()))
        XCTAssertEqual(try video.frame(at: -5).time, 0, accuracy: 0.001)
        XCTAssertEqual(try video.frame(at: 60).time, 3.96, accuracy: 0.001)
        XCTAssertEqual(try video.frame(at: .nan).time, 0, accuracy: 0.001)
    }

    /// Bad input gets a typed error quickly, never a crash or a hang.
    func testBadVideosAreRefusedWithATypedError() throws {
        let data = try Data(contentsOf: Self.h264())
        func code(_ body: () throws -> Void) -> ImageError.Code? {
            do { try body() } catch let error as ImageError { return error.code } catch { return nil }
            return nil
        }
        XCTAssertEqual(code { _ = try VideoFrameSource(data: Data()) }, .emptyData)
        XCTAssertEqual(
            code { _ = try VideoFrameSource(data: Data(repeating: 0x5A, count: 10_000)) }, .unsupportedFormat)
        // An MP4's index is at its end: cut, the container cannot be read.
        let cut = data.prefix(data.count * 6 / 10)
        XCTAssertNotNil(code { _ = try VideoFrameSource(data: cut).frame(at: 1) })
        var garbage = data.prefix(32)
        garbage.append(Data(repeating: 0xFF, count: 4096))
        XCTAssertNotNil(code { _ = try VideoFrameSource(data: garbage).frame(at: 0) })
        let audio = Self.directory.url.appendingPathComponent("audio.m4a")
        try Self.ffmpeg(["-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "aac", audio.path])
        XCTAssertEqual(code { _ = try VideoFrameSource(data: Data(contentsOf: audio)) }, .unsupportedFormat)
        XCTAssertEqual(
            code { _ = try VideoFrameSource(data: data, limits: .init(maxPixels: 320 * 240 - 1)) }, .decompressionBomb)
        let limited = try VideoFrameSource(data: data, limits: .init(maxDecodedFrames: 5))
        XCTAssertEqual(code { _ = try limited.frame(at: 2.6) }, .decompressionBomb)
        XCTAssertEqual(try limited.frame(at: 2.6, mode: .keyframe).time, 2.0, accuracy: 0.001)
    }

    /// A demuxer never reads anything but the bytes given: playlists and concat scripts that name
    /// local files or URLs are no videos here, and no file or address is opened.
    func testNestedResourcesAreNeverOpened() throws {
        let secret = Self.directory.url.appendingPathComponent("secret.mp4")
        try FileManager.default.copyItem(at: try Self.h264(), to: secret)
        let playlists = [
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nfile://\(secret.path)\n#EXT-X-ENDLIST\n",
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nhttp://127.0.0.2:9/a.ts\n#EXT-X-ENDLIST\n",
            "ffconcat version 1.0\nfile '\(secret.path)'\n",
        ]
        for playlist in playlists {
            XCTAssertThrowsError(try VideoFrameSource(data: Data(playlist.utf8)), playlist) { error in
                XCTAssertEqual((error as? ImageError)?.code, .unsupportedFormat, playlist)
            }
        }
    }

    static func packed(_ bitmap: Bitmap) -> [UInt8] {
        var bytes = [UInt8]()
        bitmap.withUnsafeBytes { raw in
            for y in 0..<bitmap.height {
                bytes += raw[(y * bitmap.bytesPerRow)..<(y * bitmap.bytesPerRow + bitmap.width * 4)]
            }
        }
        return bytes
    }
}

/// Without the trait, opening a video says so.
final class VideoWithoutTheTraitTests: XCTestCase {
    func testABuildWithoutTheTraitAnswersUnsupportedFormat() throws {
        guard !VideoFrameSource.isSupported else {
            XCTAssertTrue(VideoFrameSource.isSupported)
            return
        }
        XCTAssertThrowsError(try VideoFrameSource(data: Data(repeating: 1, count: 100))) { error in
            XCTAssertEqual((error as? ImageError)?.code, .unsupportedFormat)
        }
    }
}
