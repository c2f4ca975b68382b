import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// Video sources through the service (the `Video` trait): imgproxy's `vts`/`vtk` and thumbor's
/// `still()` on an MP4 served by the in-process origin, the frame compared with the one Debian's
/// `ffmpeg` decodes at that time, keys and ETags per time, and bad videos answered with a status
/// and a JSON body.
final class VideoServiceTests: XCTestCase {
    var origin: TestHTTPServer!
    var directory: URL!
    static let work = FileManager.default.temporaryDirectory.appendingPathComponent("imagekit-video-service")

    /// Runs `tool` (ffmpeg or ffprobe from Debian's ffmpeg package) and returns its output.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/" + tool)
        process.arguments = ["-hide_banner", "-loglevel", "error"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ImageError(.internalError, "\(tool) failed") }
        return data
    }

    /// A 4-second 320×240 H.264 MP4 of ffmpeg's moving test pattern, key frames every second.
    static let mp4: Data = {
        try? FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let url = work.appendingPathComponent("pattern.mp4")
        if !FileManager.default.fileExists(atPath: url.path) {
            _ = try? run(
                "ffmpeg",
                [
                    "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=4", "-c:v", "libx264", "-g",
                    "25",
                    "-pix_fmt", "yuv420p", "-movflags", "+faststart", url.path,
                ])
        }
        return (try? Data(contentsOf: url)) ?? Data()
    }()

    /// ffmpeg's frame at `seconds`, area-scaled to 160×120, as packed RGBA.
    static func reference(at seconds: Double) throws -> [UInt8] {
        [UInt8](
            try run(
                "ffmpeg",
                [
                    "-ss", String(seconds), "-i", work.appendingPathComponent("pattern.mp4").path, "-frames:v", "1",
                    "-vf",
                    "scale=160:120:flags=area", "-f", "rawvideo", "-pix_fmt", "rgba", "-",
                ]))
    }

    override func setUpWithError() throws {
        try XCTSkipUnless(VideoFrameSource.isSupported, "the Video trait is off")
        XCTAssertFalse(Self.mp4.isEmpty, "ffmpeg made the test video (make test-deps installs it)")
        origin = try TestHTTPServer()
        origin.route("/clip.mp4", .init(headers: [("Content-Type", "video/mp4")], body: [UInt8](Self.mp4)))
        var garbage = [UInt8](Self.mp4.prefix(32))
        garbage += [UInt8](repeating: 0xFF, count: 8192)
        origin.route("/garbage.mp4", .init(body: garbage))
        origin.route("/cut.mp4", .init(body: [UInt8](Self.mp4.prefix(Self.mp4.count / 3))))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("video-service-\(UUID().uuidString)")
    }

    override func tearDown() {
        origin?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func makeService(_ adjust: (inout ImageServiceConfiguration) -> Void = { _ in }) throws -> ImageService {
        try ImageService.forTests(cacheDirectory: directory, adjust)
    }

    var source: String { "http://127.0.0.1:\(origin.port)/clip.mp4" }

    /// The answer decoded, and its mean difference from ffmpeg's frame at `seconds`.
    func difference(_ response: ImageServiceResponse, from seconds: Double) throws -> Double {
        let image = try ImageCodersManager.shared.decode(response.body)
        XCTAssertEqual(image.width, 160)
        XCTAssertEqual(image.height, 120)
        let reference = try Self.reference(at: seconds)
        let bitmap = image.frames[0].bitmap
        var total = 0
        bitmap.withUnsafeBytes { raw in
            for y in 0..<120 {
                for x in 0..<160 {
                    for channel in 0..<3 {
                        total += abs(
                            Int(raw[y * bitmap.bytesPerRow + x * 4 + channel])
                                - Int(reference[(y * 160 + x) * 4 + channel]))
                    }
                }
            }
        }
        return Double(total) / Double(160 * 120 * 3)
    }

    func testImgproxyPostersAtASecondAndAtItsKeyFrame() async throws {
        let service = try makeService()
        let atTwo = await service.handle(
            method: "GET", path: "/insecure/rs:fit:160:160/vts:2/plain/\(source)@png", headers: [:])
        XCTAssertEqual(atTwo.status, 200, String(decoding: atTwo.body, as: UTF8.self))
        XCTAssertEqual(atTwo.header("Content-Type"), "image/png")
        let near = try difference(atTwo, from: 2)
        XCTAssertLessThan(near, 1.5, "ffmpeg's frame at 2 s")
        XCTAssertGreaterThan(try difference(atTwo, from: 1), near + 4, "not the frame at 1 s")

        // The default second (1) when the URL says none; the same video at two times is two results.
        let byDefault = await service.handle(
            method: "GET", path: "/insecure/rs:fit:160:160/plain/\(source)@png", headers: [:])
        XCTAssertLessThan(try difference(byDefault, from: 1), 1.5)
        XCTAssertNotEqual(byDefault.header("ETag"), atTwo.header("ETag"))

        // vtk: the key frame at or before 2.6 s is the one at 2 s.
        let key = await service.handle(
            method: "GET", path: "/insecure/rs:fit:160:160/video_thumbnail_second:2.6/vtk:1/plain/\(source)@png",
            headers: [:])
        XCTAssertEqual(key.status, 200)
        XCTAssertLessThan(try difference(key, from: 2), 1.5)
        XCTAssertNotEqual(key.header("ETag"), atTwo.header("ETag"))

        // A video's answer is JPEG unless a format is asked (or negotiated).
        let jpeg = await service.handle(
            method: "GET", path: "/insecure/rs:fit:160:160/vts:2/plain/\(source)", headers: [:])
        XCTAssertEqual(jpeg.header("Content-Type"), "image/jpeg")
        let webp = await service.handle(
            method: "GET", path: "/insecure/rs:fit:160:160/vts:2/plain/\(source)@webp", headers: [:])
        XCTAssertEqual(webp.header("Content-Type"), "image/webp")
    }

    func testTheOperatorsDefaultSecond() async throws {
        let service = try makeService { $0.videoThumbnailSecond = 3 }
        let poster = await service.handle(
            method: "GET", path: "/insecure/rs:fit:160:160/plain/\(source)@png", headers: [:])
        XCTAssertLessThan(try difference(poster, from: 3), 1.5)
    }

    func testThumborStill() async throws {
        let service = try makeService()
        let host = "127.0.0.1:\(origin.port)"
        // 1.5 s falls between frames (25 per second): the frame on screen then started at 1.48 s
        // (ffmpeg's -ss gives the next one, at 1.52).
        for (filter, seconds) in [("still()", 0.0), ("still(2)", 2), ("still(00:03)", 3), ("still(1.5)", 1.48)] {
            let response = await service.handle(
                method: "GET", path: "/unsafe/160x120/filters:\(filter):format(png)/\(host)/clip.mp4", headers: [:])
            XCTAssertEqual(response.status, 200, filter)
            XCTAssertLessThan(try difference(response, from: seconds), 1.5, filter)
        }
        let bad = await service.handle(
            method: "GET", path: "/unsafe/160x120/filters:still(abc)/\(host)/clip.mp4", headers: [:])
        XCTAssertEqual(bad.status, 400)
    }

    /// `/info` (imgproxy) and `/meta` (thumbor) answer a video's facts.
    func testInfoAndMetaAnswerTheVideosFacts() async throws {
        let service = try makeService()
        let host = "127.0.0.1:\(origin.port)"
        for path in ["/info/insecure/plain/\(source)", "/unsafe/meta/160x0/\(host)/clip.mp4"] {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(response.status, 200, path)
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            let video = try XCTUnwrap(object["video"] as? [String: Any], path)
            XCTAssertEqual(video["codec"] as? String, "h264")
            XCTAssertEqual(try XCTUnwrap(video["duration"] as? Double), 4, accuracy: 0.05)
            XCTAssertEqual(try XCTUnwrap(video["frame_rate"] as? Double), 25, accuracy: 0.01)
            XCTAssertEqual(video["rotation"] as? Int, 0)
            let sourceFacts = try XCTUnwrap(object["source"] as? [String: Any])
            XCTAssertEqual(sourceFacts["width"] as? Int, 320)
            XCTAssertEqual(sourceFacts["format"] as? String, "video")
        }
    }

    func testBadVideosGetAStatusAndAJSONBody() async throws {
        let service = try makeService()
        let host = "127.0.0.1:\(origin.port)"
        // A cut file's index (faststart: at the front) names frames its bytes no longer hold.
        for (name, status) in [("garbage.mp4", 415), ("cut.mp4", 415)] {
            let start = ContinuousClock.now
            let response = await service.handle(
                method: "GET", path: "/unsafe/160x120/filters:still(3)/\(host)/\(name)", headers: [:])
            XCTAssertEqual(response.status.code, status, name)
            XCTAssertEqual(response.header("Content-Type"), "application/json", name)
            XCTAssertLessThan(ContinuousClock.now - start, .seconds(1), name)
        }
        let small = try makeService { $0.maxPixels = 10_000 }
        let refused = await small.handle(method: "GET", path: "/unsafe/160x120/\(host)/clip.mp4", headers: [:])
        XCTAssertEqual(refused.status.code, 422)
    }
}
