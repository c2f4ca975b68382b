import Foundation
import NIOHTTP1
import XCTest

@testable import ImageKit

/// The manager over the real curl downloader and a disk cache, against the in-process server.
final class ImageManagerIntegrationTests: XCTestCase {
    var server: TestHTTPServer!
    var directory: URL!

    static let jpeg: [UInt8] = {
        var buffer = try! PixelBuffer(width: 400, height: 300)
        for y in 0..<300 {
            let row = buffer.row(y)
            for x in 0..<400 {
                row[x * 4] = UInt8(x & 0xFF); row[x * 4 + 1] = UInt8(y & 0xFF); row[x * 4 + 2] = UInt8((x ^ y) & 0xFF);
                row[x * 4 + 3] = 255
            }
        }
        let image = DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .jpeg)
        return Array(try! ImageCodersManager.shared.encode(image, as: .jpeg, options: .init(quality: 0.85)))
    }()

    override func setUpWithError() throws {
        server = try TestHTTPServer()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("manager-it-\(UUID().uuidString)")
    }

    override func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func makeManager() throws -> ImageManager {
        let cache = try ImageCache(directory: directory, configuration: .init(disk: .init(sweepsAtOpen: false)))
        return ImageManager(cache: cache, loader: ImageDownloader())
    }

    func testTwentyCallersShareOneTransferAndOneMayCancel() throws {
        server.route("/joined.jpg", .init(body: Self.jpeg, chunkSize: 4096, delay: .milliseconds(10)))
        let manager = try makeManager()
        let counts = Locked<[Int: Int]>([:])
        let done = expectation(description: "all complete")
        done.expectedFulfillmentCount = 20
        var tasks: [ImageLoadTask] = []
        for index in 0..<20 {
            tasks.append(
                manager.loadImage(with: server.url("/joined.jpg")) { result in
                    counts.withLock { $0[index, default: 0] += 1 }
                    switch result {
                    case .success(let loaded):
                        XCTAssertNotEqual(index, 7)
                        XCTAssertEqual(loaded.image?.width, 400)
                        XCTAssertEqual(loaded.statusCode, 200)
                    case .failure(let error):
                        XCTAssertEqual(index, 7)
                        XCTAssertEqual(error.code, .cancelled)
                    }
                    done.fulfill()
                })
        }
        tasks[7].cancel()
        wait(for: [done], timeout: 20)
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(server.requests(to: "/joined.jpg"), 1)
        XCTAssertEqual(counts.withLock { $0 }.values.sorted(), Array(repeating: 1, count: 20))
    }

    func testNotFoundIsBlacklistedAndServerErrorsAreNot() async throws {
        server.route("/busy.jpg", .init(status: .serviceUnavailable, body: Array("busy".utf8)))
        let manager = try makeManager()
        for _ in 0..<2 {
            do { _ = try await manager.loadImage(server.url("/nope.jpg")) } catch {
                XCTAssertTrue([.invalidStatusCode, .blacklisted].contains(error.code))
            }
            _ = try? await manager.loadImage(server.url("/busy.jpg"))
        }
        XCTAssertEqual(server.requests(to: "/nope.jpg"), 1, "404 is permanent: blacklisted")
        XCTAssertEqual(server.requests(to: "/busy.jpg"), 2, "503 is transient")
        do { _ = try await manager.loadImage(server.url("/nope.jpg")) } catch {
            XCTAssertEqual(error.code, .blacklisted)
        }
    }

    func testVariantsComeFromTheCachedOriginalWithoutARequest() async throws {
        server.route("/photo.jpg", .init(headers: [("ETag", "\"p1\"")], body: Self.jpeg))
        let manager = try makeManager()
        let full = try await manager.loadImage(server.url("/photo.jpg"), options: .waitStoreCache)
        XCTAssertEqual(full.image?.width, 400)
        for side in [64, 128] {
            var context = ImageLoadContext()
            context.thumbnailPixelSize = PixelSize(side)
            let thumb = try await manager.loadImage(
                server.url("/photo.jpg"), options: .waitStoreCache, context: context)
            XCTAssertEqual(thumb.image?.width, side)
            XCTAssertEqual(thumb.cacheType, .disk)
        }
        XCTAssertEqual(server.requests(to: "/photo.jpg"), 1)
    }

    func testRevalidationWith304() async throws {
        server.route("/etag.jpg") { head in
            if head.headers["If-None-Match"].first == "\"e1\"" {
                return .init(
                    status: .notModified, headers: [("ETag", "\"e1\""), ("Cache-Control", "max-age=60")], body: [])
            }
            return .init(headers: [("ETag", "\"e1\"")], body: Self.jpeg)
        }
        let manager = try makeManager()
        _ = try await manager.loadImage(server.url("/etag.jpg"), options: .waitStoreCache)
        var events: [String] = []
        for try await event in manager.imageEvents(for: server.url("/etag.jpg"), options: .refreshCached) {
            switch event {
            case .result(let result): events.append("result-\(result.cacheType)")
            case .notModified: events.append("304")
            default: break
            }
        }
        XCTAssertEqual(events, ["result-memory", "304"])
        XCTAssertEqual(server.requests(to: "/etag.jpg"), 2)
        XCTAssertEqual(server.headers(of: "/etag.jpg")?["If-None-Match"].first, "\"e1\"")
        let cache = manager.cache as! ImageCache
        let metadata = cache.diskCache.metadata(forKey: CacheKey(server.url("/etag.jpg")).identity)
        XCTAssertEqual(metadata?.http?.cacheControl, "max-age=60", "the 304 refreshed the entry's metadata")
    }

    func testTruncatedDiskEntryIsRefetched() async throws {
        server.route("/t.jpg", .init(body: Self.jpeg))
        let manager = try makeManager()
        _ = try await manager.loadImage(server.url("/t.jpg"), options: .waitStoreCache)
        let cache = manager.cache as! ImageCache
        cache.memoryCache.removeAll()
        let path = (cache.diskCache as! DiskCache).path(forKey: CacheKey(server.url("/t.jpg")).identity)
        let truncated = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(1000)
        try truncated.write(to: URL(fileURLWithPath: path))
        let result = try await manager.loadImage(server.url("/t.jpg"), options: .waitStoreCache)
        XCTAssertEqual(result.image?.width, 400)
        XCTAssertEqual(server.requests(to: "/t.jpg"), 2)
    }

    func testCancelWhileDownloading() throws {
        server.route("/slow.jpg", .init(body: Self.jpeg, chunkSize: 1024, delay: .milliseconds(30)))
        let manager = try makeManager()
        let count = Locked(0)
        let done = expectation(description: "cancelled")
        let task = manager.loadImage(with: server.url("/slow.jpg"), progress: { _ in }) { result in
            count.withLock { $0 += 1 }
            if case .failure(let error) = result {
                XCTAssertEqual(error.code, .cancelled)
            } else {
                XCTFail("not cancelled")
            }
            done.fulfill()
        }
        Thread.sleep(forTimeInterval: 0.15)
        task.cancel()
        wait(for: [done], timeout: 5)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(count.withLock { $0 }, 1)
        XCTAssertFalse(manager.isFailedURL(server.url("/slow.jpg")))
        XCTAssertFalse(manager.isRunning)
    }

    /// A 12 MP photo-like picture (smooth shading, edges and fine texture), encoded as a JPEG.
    static func photo(progressive: Bool) throws -> [UInt8] {
        let width = 4000, height = 3000
        var buffer = try PixelBuffer(width: width, height: height)
        var seed: UInt32 = 12345
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                let noise = Int(seed >> 28) - 8
                let ring = ((x - 1800) * (x - 1800) + (y - 1400) * (y - 1400)) / 4000 % 64
                row[x * 4] = UInt8(clamping: x * 200 / width + noise + ring)
                row[x * 4 + 1] = UInt8(clamping: y * 180 / height + noise + (x / 300 % 2) * 40)
                row[x * 4 + 2] = UInt8(clamping: 120 + noise + ((x + y) / 50 % 3) * 30)
                row[x * 4 + 3] = 255
            }
        }
        let image = DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .jpeg)
        return Array(
            try ImageCodersManager.shared.encode(
                image, as: .jpeg, options: .init(quality: 0.85, progressive: progressive)))
    }

    /// `.thumbnailFromFirstScans`: a 256 px thumbnail of a 12 MP progressive JPEG is made from
    /// its DC scans; the transfer stops there (at most a third of the bytes), the thumbnail is
    /// cached, the cut bytes are not; a baseline file with the flag loads whole.
    func testThumbnailFromFirstScansStopsTheTransfer() async throws {
        let progressive = try Self.photo(progressive: true)
        server.route("/progressive.jpg", .init(body: progressive, chunkSize: 32 << 10, delay: .milliseconds(3)))
        let manager = try makeManager()
        var context = ImageLoadContext()
        context.thumbnailPixelSize = PixelSize(256)
        let result = try await manager.loadImage(
            server.url("/progressive.jpg"), options: [.thumbnailFromFirstScans, .waitStoreCache],
            context: context)
        let thumbnail = try XCTUnwrap(result.image)
        XCTAssertEqual(thumbnail.width, 256)
        XCTAssertEqual(thumbnail.height, 192)
        XCTAssertFalse(thumbnail.isPartial)
        let received = try XCTUnwrap(result.data).count
        print(
            "first scans: \(received) of \(progressive.count) bytes (\(result.metrics?.bytesReceived ?? -1) received when cut)"
        )
        XCTAssertLessThanOrEqual(
            Int(try XCTUnwrap(result.metrics?.bytesReceived)), progressive.count / 3,
            "the transfer went on after the DC scans")
        XCTAssertLessThan(received, progressive.count / 3)
        // The same thumbnail (within the DC bound) as from the whole file.
        let whole = try ImageCodersManager.shared.decode(
            Data(progressive), options: .init(thumbnailPixelSize: PixelSize(256)))
        XCTAssertGreaterThan(psnrOf(thumbnail.frames[0].bitmap, whole.frames[0].bitmap), 40)

        // The thumbnail is cached; the cut bytes are not an original.
        let again = try await manager.loadImage(
            server.url("/progressive.jpg"), options: .thumbnailFromFirstScans, context: context)
        XCTAssertEqual(again.cacheType, .memory)
        XCTAssertEqual(server.requests(to: "/progressive.jpg"), 1)
        let originalKey = manager.cacheKey(for: server.url("/progressive.jpg"))
        let original = try? await manager.cache.query(
            originalKey, cacheType: .all, options: [.avoidDecodeImage], decoding: .default)
        XCTAssertNil(original?.data)
        XCTAssertNil(original?.image)

        // A baseline file cannot finish early: loaded whole, the original stored.
        let baseline = try Self.photo(progressive: false)
        server.route("/baseline.jpg", .init(body: baseline, chunkSize: 64 << 10))
        let full = try await manager.loadImage(
            server.url("/baseline.jpg"), options: [.thumbnailFromFirstScans, .waitStoreCache],
            context: context)
        XCTAssertEqual(full.image?.width, 256)
        XCTAssertEqual(full.data?.count, baseline.count)
    }

    private func psnrOf(_ a: Bitmap, _ b: Bitmap) -> Double {
        var squared = 0.0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a[x, y], q = b[x, y]
                for (u, v) in [(p.r, q.r), (p.g, q.g), (p.b, q.b)] {
                    squared += Double((Int(u) - Int(v)) * (Int(u) - Int(v)))
                }
            }
        }
        let mse = squared / Double(a.width * a.height * 3)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }
}
