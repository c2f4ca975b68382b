import Foundation
import XCTest

@testable import ImageKit

/// The manager's load flow (spec §4.1, §4.2) with a scripted loader and a real cache in a
/// temporary directory; no sockets.
final class ImageManagerTests: XCTestCase {
    var directory: TemporaryDirectory!
    var loader: MockLoader!
    var cache: ImageCache!

    override func setUp() {
        directory = TemporaryDirectory("image-manager")
        loader = MockLoader()
        cache = try! ImageCache(
            directory: directory.url,
            configuration: .init(memory: .init(costLimit: 256 << 20), disk: .init(sweepsAtOpen: false)))
    }

    override func tearDown() {
        directory.remove()
        // XCTest keeps test-case objects until the process ends, where LeakSanitizer cannot see
        // them: release what they hold.
        loader = nil
        cache = nil
    }

    func makeManager(
        _ configuration: ImageManagerConfiguration = .init(), transformer: (any ImageTransforming)? = nil,
        cacheKeyFilter: CacheKeyFilter? = nil, serializer: ImageCacheSerializer? = nil,
        processor: ImageLoadOptionsProcessor? = nil, coders: ImageCodersManager = .shared
    ) -> ImageManager {
        ImageManager(
            cache: cache, loader: loader, coders: coders, transformer: transformer, cacheKeyFilter: cacheKeyFilter,
            cacheSerializer: serializer, optionsProcessor: processor, configuration: configuration)
    }

    // Made on each use rather than kept in statics: LeakSanitizer reports buffers that only
    // statics and the test objects XCTest keeps reach.
    static var jpeg: Data {
        try! ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 320, height: 240), format: .jpeg),
            as: .jpeg, options: .init(quality: 0.9))
    }
    static var png: Data {
        try! ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 64, height: 48, alpha: true)), as: .png,
            options: .default)
    }
    static var gif: Data {
        let frames = (0..<3).map {
            ImageFrame(bitmap: TestImages.blocks(width: 32, height: 32, colors: 3 + $0), duration: 0.1)
        }
        return try! ImageCodersManager.shared.encode(
            DecodedImage(frames: frames, loopCount: 0, format: .gif), as: .gif, options: .default)
    }

    func url(_ path: String) -> URL { URL(string: "mock://host\(path)")! }

    /// The completion-handler form, awaited: every call of `completion` in order.
    func load(
        _ manager: ImageManager, _ url: URL?, options: ImageLoadOptions = [], context: ImageLoadContext = .init(),
        expectedCalls: Int = 1
    ) async -> [Result<ImageLoadResult, ImageError>] {
        let calls = Locked<[Result<ImageLoadResult, ImageError>]>([])
        let done = expectation(description: "completion")
        done.expectedFulfillmentCount = expectedCalls
        manager.loadImage(with: url, options: options, context: context) { result in
            calls.withLock { $0.append(result) }
            done.fulfill()
        }
        await fulfillment(of: [done], timeout: 10)
        // Anything more would arrive now.
        try? await Task.sleep(nanoseconds: 50_000_000)
        return calls.withLock { $0 }
    }

    // MARK: Gate and failed URLs

    func testNilOrEmptyURLFailsOnceWithoutARequest() async {
        let manager = makeManager()
        for bad in [nil, URL(string: "relative-path")] as [URL?] {
            let calls = await load(manager, bad)
            XCTAssertEqual(calls.count, 1)
            XCTAssertEqual(calls.first.flatMap { try? $0.get() } == nil, true)
            if case .failure(let error)? = calls.first {
                XCTAssertEqual(error.code, .invalidURL)
            } else {
                XCTFail("no error")
            }
        }
        XCTAssertEqual(loader.totalRequests, 0)
        XCTAssertFalse(manager.isRunning)
        do {
            _ = try await manager.loadImage("")
            XCTFail("an empty URL loaded")
        } catch {
            XCTAssertEqual(error.code, .invalidURL)
        }
    }

    func testPermanentFailureBlacklistsUntilRetryFailedSucceeds() async throws {
        let manager = makeManager()
        loader.answer("/bad.jpg", .data(Data("not an image".utf8)))
        do { _ = try await manager.loadImage(url("/bad.jpg")); XCTFail("decoded garbage") } catch {
            XCTAssertEqual(error.code, .badImageData)
        }
        do { _ = try await manager.loadImage(url("/bad.jpg")); XCTFail("blacklisted URL loaded") } catch {
            XCTAssertEqual(error.code, .blacklisted)
        }
        XCTAssertEqual(loader.requestCount("/bad.jpg"), 1, "a blacklisted URL makes no request")
        XCTAssertTrue(manager.isFailedURL(url("/bad.jpg")))

        loader.answer("/bad.jpg", .data(Self.jpeg))
        let retried = try await manager.loadImage(url("/bad.jpg"), options: .retryFailed)
        XCTAssertEqual(loader.requestCount("/bad.jpg"), 2)
        XCTAssertEqual(retried.image?.width, 320)
        XCTAssertFalse(manager.isFailedURL(url("/bad.jpg")), "a successful retry removes the URL")
        cache.memoryCache.removeAll()
        _ = try await manager.loadImage(url("/bad.jpg"))
    }

    func testTransientFailuresAreNotBlacklisted() async {
        let manager = makeManager()
        let transient: [ImageError] = [
            ImageError(.timedOut, "t"), ImageError(.cannotConnect, "c"), ImageError(.cannotFindHost, "h"),
            ImageError(.connectionLost, "l"), ImageError(.invalidStatusCode, "503", httpStatusCode: 503),
            ImageError(.invalidStatusCode, "429", httpStatusCode: 429),
        ]
        for (index, error) in transient.enumerated() {
            loader.answer("/t\(index)", .failure(error))
            for _ in 0..<2 {
                do { _ = try await manager.loadImage(url("/t\(index)")) } catch {
                    XCTAssertEqual(error.code, transient[index].code)
                }
            }
            XCTAssertEqual(loader.requestCount("/t\(index)"), 2, "\(error.code) must not blacklist")
        }
        // 404 is permanent.
        for _ in 0..<2 { _ = try? await manager.loadImage(url("/missing.jpg")) }
        XCTAssertEqual(loader.requestCount("/missing.jpg"), 1)
    }

    func testBlacklistIsKeyedByURLNotCacheKey() async throws {
        let manager = makeManager(cacheKeyFilter: .removingQuery)
        loader.answer("/a.jpg", .data(Data("garbage".utf8)))
        _ = try? await manager.loadImage(url("/a.jpg?sig=1"))
        XCTAssertTrue(manager.isFailedURL(url("/a.jpg?sig=1")))
        XCTAssertFalse(manager.isFailedURL(url("/a.jpg?sig=2")))
        _ = try? await manager.loadImage(url("/a.jpg?sig=2"))
        XCTAssertEqual(loader.requestCount("/a.jpg"), 2)
    }

    func testFailedURLTimeToLive() async {
        let manager = makeManager(.init(failedURLTimeToLive: 0.2))
        _ = try? await manager.loadImage(url("/gone.jpg"))
        XCTAssertTrue(manager.isFailedURL(url("/gone.jpg")))
        try? await Task.sleep(nanoseconds: 300_000_000)
        XCTAssertFalse(manager.isFailedURL(url("/gone.jpg")))
    }

    /// Polls `condition` for up to 5 s.
    func waitUntil(_ condition: @escaping @Sendable () -> Bool) async throws {
        for _ in 0..<500 {
            if condition() { return }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        XCTFail("condition not met in 5 s")
    }
}
