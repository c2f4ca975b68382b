import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// thumbor-video-engine (thumbor 7.8 with Debian's ffmpeg, the answers `make test` records with
/// Tests/thumbor/video_engine.py) against the service on the same sources and URLs: stills of a
/// video are the same frame at the same size, videos and GIFs written as MP4 or WebM have the same
/// codec, size and length.
final class ThumborVideoEngineTests: XCTestCase {
    struct Row: Decodable {
        struct Video: Decodable {
            var codec: String
            var width: Int
            var height: Int
            var frames: Int
            var duration: Double
        }
        var path: String
        var status: Int
        var contentType: String?
        var file: String?
        var video: Video?
    }

    func testStillsAndVideosMatchThumborVideoEngine() async throws {
        try XCTSkipUnless(VideoFrameSource.isSupported, "the Video trait is off")
        let folder = URL(
            fileURLWithPath: try XCTUnwrap(
                ProcessInfo.processInfo.environment["IMAGEKIT_THUMBOR_VIDEO"],
                "IMAGEKIT_THUMBOR_VIDEO is not set: run the tests with `make test`, which asks thumbor-video-engine first"
            ))
        let rows = try String(contentsOf: folder.appendingPathComponent("rows.jsonl"), encoding: .utf8)
            .split(separator: "\n").map { try JSONDecoder().decode(Row.self, from: Data($0.utf8)) }
        XCTAssertEqual(rows.count, 9)
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        for name in ["clip.mp4", "anim.gif"] {
            origin.route(
                "/\(name)", .init(body: [UInt8](try Data(contentsOf: folder.appendingPathComponent("sources/\(name)"))))
            )
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try ImageService.forTests(cacheDirectory: directory) { _ in }
        let host = "127.0.0.1:\(origin.port)"
        for row in rows {
            XCTAssertEqual(row.status, 200, "thumbor-video-engine: \(row.path)")
            let (head, name) = (
                row.path.split(separator: "/").dropLast().joined(separator: "/"), row.path.split(separator: "/").last!
            )
            let response = await service.handle(method: "GET", path: "/unsafe/\(head)/\(host)/\(name)", headers: [:])
            XCTAssertEqual(response.status, 200, row.path)
            XCTAssertEqual(response.header("Content-Type"), row.contentType, row.path)
            let theirs = try Data(contentsOf: folder.appendingPathComponent(try XCTUnwrap(row.file)))
            if let expected = row.video {
                let video = try VideoFrameSource(data: response.body)
                XCTAssertEqual(video.info.codec, expected.codec, row.path)
                XCTAssertEqual(
                    video.info.codedSize, PixelSize(width: expected.width, height: expected.height), row.path)
                XCTAssertEqual(video.info.duration, expected.duration, accuracy: 0.05, row.path)
                let frames = try Self.packets(response.body, directory.appendingPathComponent("ours-\(row.file!)"))
                if name.hasSuffix(".mp4") {
                    XCTAssertEqual(expected.frames, 100, row.path)
                    XCTAssertEqual(frames, expected.frames, row.path)
                } else {
                    // ffmpeg writes a GIF at a constant rate (its 240 ms frame repeated in MP4);
                    // ImageKit keeps the GIF's six frames and their own times.
                    XCTAssertEqual(frames, 6, row.path)
                }
                // The same pictures: their frame at 0.5 s against ours.
                let ours = try video.frame(at: 0.5).bitmap,
                    reference = try VideoFrameSource(data: theirs).frame(at: 0.5).bitmap
                XCTAssertLessThan(Self.difference(ours, reference), 6, row.path)
            } else {
                let ours = try ImageCodersManager.shared.decode(response.body).frames[0].bitmap
                let reference = try ImageCodersManager.shared.decode(theirs).frames[0].bitmap
                XCTAssertEqual([ours.width, ours.height], [reference.width, reference.height], row.path)
                XCTAssertLessThan(Self.difference(ours, reference), 4, "\(row.path): the same frame")
            }
        }
    }

    /// ffprobe's count of a video's packets (a frame each).
    static func packets(_ data: Data, _ url: URL) throws -> Int {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
        let output = try VideoServiceTests.run(
            "ffprobe",
            [
                "-select_streams", "v:0", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0",
                url.path,
            ])
        return Int(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Mean absolute difference per channel of two bitmaps of one size.
    static func difference(_ a: Bitmap, _ b: Bitmap) -> Double {
        guard a.width == b.width, a.height == b.height else { return .infinity }
        var total = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a[x, y], q = b[x, y]
                total += abs(Int(p.r) - Int(q.r)) + abs(Int(p.g) - Int(q.g)) + abs(Int(p.b) - Int(q.b))
            }
        }
        return Double(total) / Double(a.width * a.height * 3)
    }
}
