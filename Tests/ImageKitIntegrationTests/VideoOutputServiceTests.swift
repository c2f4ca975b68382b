import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// Sprite sheets (`vtt`) and animated previews (`vta`) of a video, and animations written as
/// video (`@mp4`, thumbor's `gifv()` and `format(webm)`), through the service; the tiles compared
/// with the frames Debian's `ffmpeg` decodes, the videos read back by `ffprobe`.
final class VideoOutputServiceTests: XCTestCase {
    var origin: TestHTTPServer!
    var directory: URL!

    static let work = FileManager.default.temporaryDirectory.appendingPathComponent("imagekit-video-output")

    /// A 6-frame 120×90 GIF of flat colours, 80 ms a frame but the third (240 ms).
    static let gif: Data = {
        let colours: [(UInt8, UInt8, UInt8)] = [
            (230, 40, 40), (40, 200, 60), (40, 70, 220), (240, 220, 30), (30, 30, 30), (240, 240, 240),
        ]
        let frames = colours.enumerated().map { index, colour in
            let buffer = try! PixelBuffer(width: 120, height: 90)
            buffer.fill(with: RGBAColor(red: colour.0, green: colour.1, blue: colour.2, alpha: 255))
            return ImageFrame(bitmap: buffer.freeze(isOpaque: true), duration: index == 2 ? 0.24 : 0.08)
        }
        return try! ImageCodersManager.shared.encode(
            DecodedImage(frames: frames, format: .gif), as: .gif, options: .init())
    }()

    static func thumborImage(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("thumbor/integration-images/" + name)
    }

    override func setUpWithError() throws {
        try XCTSkipUnless(VideoFrameSource.isSupported, "the Video trait is off")
        XCTAssertFalse(VideoServiceTests.mp4.isEmpty, "ffmpeg made the test video (make test-deps installs it)")
        try FileManager.default.createDirectory(at: Self.work, withIntermediateDirectories: true)
        origin = try TestHTTPServer()
        origin.route("/clip.mp4", .init(body: [UInt8](VideoServiceTests.mp4)))
        origin.route("/anim.gif", .init(body: [UInt8](Self.gif)))
        origin.route("/still.png", .init(body: [UInt8](try Data(contentsOf: Self.thumborImage("rgba.png")))))
        origin.route(
            "/thumbor-animated.gif", .init(body: [UInt8](try Data(contentsOf: Self.thumborImage("animated.gif")))))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("video-output-\(UUID().uuidString)")
    }

    override func tearDown() {
        origin?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    var host: String { "127.0.0.1:\(origin.port)" }
    var clip: String { "http://\(host)/clip.mp4" }

    func makeService(_ adjust: (inout ImageServiceConfiguration) -> Void = { _ in }) throws -> ImageService {
        try ImageService.forTests(cacheDirectory: directory, adjust)
    }

    /// ffmpeg's frame at `seconds`, area-scaled to `width`×`height`, packed RGBA.
    static func reference(at seconds: Double, _ width: Int, _ height: Int) throws -> [UInt8] {
        [UInt8](
            try VideoServiceTests.run(
                "ffmpeg",
                [
                    "-ss", String(seconds), "-i", VideoServiceTests.work.appendingPathComponent("pattern.mp4").path,
                    "-frames:v", "1", "-vf", "scale=\(width):\(height):flags=area", "-f", "rawvideo", "-pix_fmt",
                    "rgba",
                    "-",
                ]))
    }

    /// Mean difference per channel between a region of `bitmap` and packed RGBA of its size.
    static func difference(_ bitmap: Bitmap, x: Int, y: Int, _ reference: [UInt8], _ width: Int, _ height: Int)
        -> Double
    {
        var total = 0
        for row in 0..<height {
            for column in 0..<width {
                let pixel = bitmap[x + column, y + row]
                let offset = (row * width + column) * 4
                total +=
                    abs(Int(pixel.r) - Int(reference[offset])) + abs(Int(pixel.g) - Int(reference[offset + 1]))
                    + abs(Int(pixel.b) - Int(reference[offset + 2]))
            }
        }
        return Double(total) / Double(width * height * 3)
    }

    func image(_ response: ImageServiceResponse, _ context: String) throws -> DecodedImage {
        XCTAssertEqual(
            response.status, 200, "\(context): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        return try ImageCodersManager.shared.decode(response.body)
    }

    func testASpriteSheetsTilesAreTheFramesInOrder() async throws {
        let service = try makeService()
        let sheet = try image(
            await service.handle(
                method: "GET", path: "/insecure/vts:0/vtt:1:2:2:80:60/plain/\(clip)@png", headers: [:]),
            "vtt")
        XCTAssertEqual([sheet.width, sheet.height], [160, 120])
        for (index, seconds) in [0.0, 1, 2, 3].enumerated() {
            let tile = Self.difference(
                sheet.frames[0].bitmap, x: (index % 2) * 80, y: (index / 2) * 60,
                try Self.reference(at: seconds, 80, 60),
                80, 60)
            XCTAssertLessThan(tile, 3, "tile \(index) is the frame at \(seconds) s")
            let other = Self.difference(
                sheet.frames[0].bitmap, x: (index % 2) * 80, y: (index / 2) * 60,
                try Self.reference(at: seconds + 0.5, 80, 60), 80, 60)
            XCTAssertGreaterThan(other, tile + 3, "tile \(index) is not the frame half a second later")
        }
        // A negative step spreads the tiles over the video: 4 s / 4 tiles, the same sheet.
        let spread = try image(
            await service.handle(
                method: "GET", path: "/insecure/vts:0/vtt:-1:2:2:80:60/plain/\(clip)@png", headers: [:]),
            "spread")
        XCTAssertEqual(spread.frames[0].bitmap.canonicalSHA256(), sheet.frames[0].bitmap.canonicalSHA256())
        // The sheet then goes through the other options as a source does.
        let resized = try image(
            await service.handle(
                method: "GET", path: "/insecure/rs:fit:80:80/vts:0/vtt:1:2:2:80:60/plain/\(clip)@png", headers: [:]),
            "resized")
        XCTAssertEqual([resized.width, resized.height], [80, 60])
    }

    func testSpriteTrimExtendAndFill() async throws {
        let service = try makeService()
        func size(_ options: String) async throws -> (DecodedImage, [Int]) {
            let sheet = try image(
                await service.handle(method: "GET", path: "/insecure/vts:0/\(options)/plain/\(clip)@png", headers: [:]),
                options)
            return (sheet, [sheet.width, sheet.height])
        }
        // Times 0, 1.5, 3, 4.5: the last is past the 4 s video. Left black, or trimmed away.
        let (untrimmed, untrimmedSize) = try await size("vtt:1.5:4:1:80:60")
        XCTAssertEqual(untrimmedSize, [320, 60])
        XCTAssertEqual(untrimmed.frames[0].bitmap[300, 30].r, 0)
        let trimmed = try await size("vtt:1.5:4:1:80:60:0:1").1
        XCTAssertEqual(trimmed, [240, 60])
        let twoRows = try await size("vtt:1.5:2:3:80:60:0:1").1
        XCTAssertEqual(twoRows, [160, 120], "two rows hold three tiles")
        // extend: each 80×60 frame centred on a black 100×100 tile.
        let (extended, extendedSize) = try await size("vtt:1:2:1:100:100:1")
        XCTAssertEqual(extendedSize, [200, 100])
        XCTAssertEqual(extended.frames[0].bitmap[50, 5].r, 0)
        XCTAssertEqual(extended.frames[0].bitmap[50, 5].g, 0)
        let fitted = try await size("vtt:1:2:1:100:100").1
        XCTAssertEqual(fitted, [200, 75], "fitted: 100×75 tiles")
        // fill: 80×60 covers 60×60 and is cropped around the focus.
        let (filled, filledSize) = try await size("vtt:1:2:1:60:60:0:0:1")
        XCTAssertEqual(filledSize, [120, 60])
        let frame = try Self.reference(at: 0, 80, 60)
        var centre: [UInt8] = []
        for row in 0..<60 { centre += frame[(row * 80 + 10) * 4..<(row * 80 + 70) * 4] }
        XCTAssertLessThan(Self.difference(filled.frames[0].bitmap, x: 0, y: 0, centre, 60, 60), 3)
    }

    func testAnAnimatedPreview() async throws {
        let service = try makeService()
        let preview = try image(
            await service.handle(method: "GET", path: "/insecure/vts:0/vta:1:250:3:80:60/plain/\(clip)", headers: [:]),
            "vta")
        XCTAssertEqual(preview.format, .gif, "an animation of a video is a GIF unless asked")
        XCTAssertEqual(preview.frameCount, 3)
        XCTAssertEqual(try (0..<3).map { try preview.frame(at: $0).duration }, [0.25, 0.25, 0.25])
        XCTAssertEqual([preview.width, preview.height], [80, 60])
        let webp = await service.handle(
            method: "GET", path: "/insecure/video_thumbnail_animation:1:100:4:80:0/plain/\(clip)@webp", headers: [:])
        XCTAssertEqual(webp.header("Content-Type"), "image/webp")
        XCTAssertEqual(try image(webp, "webp").frameCount, 4)
        // As video: the preview's frames and timing in an MP4.
        let mp4 = await service.handle(
            method: "GET", path: "/insecure/vts:0/vta:1:250:3:80:60/plain/\(clip)@mp4", headers: [:])
        XCTAssertEqual(mp4.header("Content-Type"), "video/mp4")
        let probed = try probe(mp4.body, "preview.mp4")
        XCTAssertEqual(probed.starts, [0, 250, 500])
        XCTAssertEqual(probed.duration, 750)
    }

    /// The frames together are bounded by time: past the deadline the sheet stops with 422's error.
    func testASheetStopsAtItsDeadline() throws {
        let video = try VideoFrameSource(data: VideoServiceTests.mp4)
        let layout = VideoStillsLayout(
            .init(layout: .sprite(columns: 4, rows: 4), step: 0.2, width: 80, height: 60), info: video.info, start: 0)
        XCTAssertThrowsError(try layout.render(video, mode: .exact, deadline: .now - .seconds(1))) { error in
            XCTAssertEqual((error as? ImageError)?.code, .decompressionBomb)
            XCTAssertEqual(ImageServiceError(error as! ImageError).status, 422)
        }
        XCTAssertNoThrow(try layout.render(video, mode: .exact, deadline: .now + .seconds(20)))
    }

    func testStillsAreBoundedAndOnlyForVideos() async throws {
        let service = try makeService()
        let tooMany = await service.handle(
            method: "GET", path: "/insecure/vtt:1:20:20:16:16/plain/\(clip)", headers: [:])
        XCTAssertEqual(tooMany.status.code, 422)
        XCTAssertEqual(tooMany.header("Content-Type"), "application/json")
        let small = try makeService { $0.maxPixels = 40_000 }
        let tooLarge = await small.handle(
            method: "GET", path: "/insecure/vtt:1:4:4:320:240/plain/\(clip)", headers: [:])
        XCTAssertEqual(tooLarge.status.code, 422)
        let invalid = await service.handle(
            method: "GET", path: "/insecure/vtt:1:2:2:80:60:x/plain/\(clip)", headers: [:])
        XCTAssertEqual(invalid.status.code, 400)
        // An image source ignores a video's options.
        let still = try image(
            await service.handle(
                method: "GET", path: "/insecure/vtt:1:2:2:80:60/plain/http://\(host)/still.png", headers: [:]),
            "image")
        XCTAssertEqual(still.format, .png)
    }

    /// The starts of a video's frames and its length (ms), read by ffprobe, and its codec.
    func probe(_ data: Data, _ name: String) throws -> (codec: String, starts: [Double], duration: Double) {
        let url = Self.work.appendingPathComponent(name.contains(".") ? name : name + ".video")
        try data.write(to: url)
        let codec = String(
            decoding: try VideoServiceTests.run(
                "ffprobe", ["-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0", url.path]),
            as: UTF8.self
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        let starts = String(
            decoding: try VideoServiceTests.run(
                "ffprobe", ["-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", url.path]),
            as: UTF8.self
        ).split(separator: "\n").compactMap { Double($0) }.map { ($0 * 1000).rounded() }.sorted()
        let duration =
            Double(
                String(
                    decoding: try VideoServiceTests.run(
                        "ffprobe", ["-show_entries", "format=duration", "-of", "csv=p=0", url.path]), as: UTF8.self
                ).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        return (codec, starts, (duration * 1000).rounded())
    }

    func testAGIFBecomesVideoInBothGrammars() async throws {
        let service = try makeService()
        let gif = "http://\(host)/anim.gif"
        let cases: [(String, String, String)] = [
            ("/insecure/plain/\(gif)@mp4", "video/mp4", "h264"), ("/insecure/f:mp4/plain/\(gif)", "video/mp4", "h264"),
            ("/unsafe/filters:gifv()/\(host)/anim.gif", "video/mp4", "h264"),
            ("/unsafe/filters:gifv(mp4)/\(host)/anim.gif", "video/mp4", "h264"),
            ("/unsafe/filters:gifv(webm)/\(host)/anim.gif", "video/webm", "vp9"),
            ("/unsafe/filters:format(webm)/\(host)/anim.gif", "video/webm", "vp9"),
        ]
        var etags: Set<String> = []
        for (index, (path, type, codec)) in cases.enumerated() {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(response.status, 200, path)
            XCTAssertEqual(response.header("Content-Type"), type, path)
            let probed = try probe(response.body, "gif-\(index).\(type.hasSuffix("mp4") ? "mp4" : "webm")")
            XCTAssertEqual(probed.codec, codec, path)
            XCTAssertEqual(probed.starts, [0, 80, 160, 400, 480, 560], "\(path): the GIF's frames and timing")
            XCTAssertEqual(probed.duration, 640, path)
            etags.insert(response.header("ETag") ?? "")
        }
        XCTAssertEqual(etags.count, 4, "imgproxy's mp4 (@mp4 = f:mp4), gifv(mp4) = gifv(), gifv(webm), format(webm)")
        // Resized first (61×46), then written with even sides.
        let small = await service.handle(method: "GET", path: "/insecure/rs:fit:61:61/plain/\(gif)@mp4", headers: [:])
        XCTAssertEqual(try probe(small.body, "small.mp4").codec, "h264")
        let video = try VideoFrameSource(data: small.body)
        XCTAssertEqual([video.info.codedSize.width, video.info.codedSize.height], [60, 46])
        // A still stays an image under gifv(); a video format asked of a still is a one-second video.
        let still = await service.handle(method: "GET", path: "/unsafe/filters:gifv()/\(host)/still.png", headers: [:])
        XCTAssertEqual(still.header("Content-Type"), "image/png")
    }

    /// A video answered as video: every frame, resized (and filtered) as any frame, at the
    /// source's rate, from the time asked to the end; the frames are the source's.
    func testAVideoAnsweredAsVideo() async throws {
        let service = try makeService()
        let cases: [(String, String, Int)] = [
            ("/insecure/rs:fit:160:160/plain/\(clip)@mp4", "h264", 100),
            ("/unsafe/160x120/filters:format(webm)/\(host)/clip.mp4", "vp9", 100),
            ("/insecure/rs:fit:160:160/vts:2/plain/\(clip)@mp4", "h264", 50),
        ]
        for (index, (path, codec, frames)) in cases.enumerated() {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(
                response.status, 200, "\(path): \(String(decoding: response.body.prefix(200), as: UTF8.self))")
            let probed = try probe(response.body, "transcoded-\(index)")
            XCTAssertEqual(probed.codec, codec, path)
            XCTAssertEqual(probed.starts.count, frames, path)
            XCTAssertEqual(probed.duration, Double(frames * 40), accuracy: 1, path)
            let video = try VideoFrameSource(data: response.body)
            XCTAssertEqual(video.info.displaySize, PixelSize(width: 160, height: 120), path)
            // Its frame at 1 s is the source's at 1 s (from 2 s: the source's at 3 s).
            let offset = index == 2 ? 2.0 : 0
            let frame = try video.frame(at: 1).bitmap
            let same = Self.difference(frame, x: 0, y: 0, try Self.reference(at: 1 + offset, 160, 120), 160, 120)
            let next = Self.difference(frame, x: 0, y: 0, try Self.reference(at: 1.2 + offset, 160, 120), 160, 120)
            XCTAssertLessThan(same, 6, path)
            XCTAssertGreaterThan(next, same + 2, path)
        }
        // All of its frames together stay within the pixel limit.
        let small = try makeService { $0.maxPixels = 1_000_000 }
        let refused = await small.handle(method: "GET", path: "/insecure/plain/\(clip)@mp4", headers: [:])
        XCTAssertEqual(refused.status.code, 422)
        XCTAssertEqual(refused.header("Content-Type"), "application/json")
    }

    func testThumborsAnimatedGIFAsMP4IsUnderHalfItsBytes() async throws {
        let service = try makeService()
        let gif = try Data(contentsOf: Self.thumborImage("animated.gif"))
        let response = await service.handle(
            method: "GET", path: "/unsafe/filters:gifv()/\(host)/thumbor-animated.gif", headers: [:])
        XCTAssertEqual(response.header("Content-Type"), "video/mp4")
        XCTAssertLessThan(response.body.count * 2, gif.count, "MP4 \(response.body.count) B, GIF \(gif.count) B")
        let frames = try ImageCodersManager.shared.decode(Data(gif)).frameCount
        XCTAssertEqual(try probe(response.body, "thumbor.mp4").starts.count, frames)
    }

    /// A real browser plays what the service writes: Debian's Chromium, headless, loads an MP4 and
    /// a WebM from the service into `<video>` elements and reports `canplaythrough` with each
    /// one's size and length.
    func testChromiumPlaysTheMP4AndWebMOutputs() async throws {
        let chromium = try XCTUnwrap(
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            },
            "Chromium is needed (make test-deps installs Debian's chromium)")
        let service = try makeService()
        let page = Self.work.appendingPathComponent("play-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: page, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: page) }
        let outputs = [
            ("gif.mp4", "/unsafe/filters:gifv()/\(host)/anim.gif"),
            ("gif.webm", "/unsafe/filters:gifv(webm)/\(host)/anim.gif"),
            ("preview.mp4", "/insecure/vts:0/vta:1:250:3:80:60/plain/\(clip)@mp4"),
        ]
        for (name, path) in outputs {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(response.status, 200, path)
            try response.body.write(to: page.appendingPathComponent(name))
        }
        let script = """
            <!doctype html><div id="result">pending</div><script>
            const names = [\(outputs.map { "\"\($0.0)\"" }.joined(separator: ", "))], results = {};
            const done = () => { if (Object.keys(results).length == names.length)
                document.getElementById("result").textContent = JSON.stringify(results); };
            for (const name of names) {
                const video = document.createElement("video");
                video.muted = true; video.preload = "auto";
                video.oncanplaythrough = () => { results[name] = `${video.videoWidth}x${video.videoHeight} ${video.duration.toFixed(2)}`; done(); };
                video.onerror = () => { results[name] = "error " + video.error.code; done(); };
                video.src = name; document.body.appendChild(video);
            }
            </script>
            """
        try Data(script.utf8).write(to: page.appendingPathComponent("play.html"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromium)
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(page.path)/profile",
            "--virtual-time-budget=10000", "--dump-dom", page.appendingPathComponent("play.html").absoluteString,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let killer = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: killer)
        let dom = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        killer.cancel()
        let start = try XCTUnwrap(dom.range(of: "<div id=\"result\">"), dom)
        let json = dom[start.upperBound...].prefix { $0 != "<" }
        let results = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String], String(json))
        XCTAssertEqual(results["gif.mp4"], "120x90 0.64")
        XCTAssertEqual(results["gif.webm"], "120x90 0.64")
        XCTAssertEqual(results["preview.mp4"], "80x60 0.75")
    }
}
