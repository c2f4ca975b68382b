import Foundation
import XCTest

@testable import ImageKit

extension ImageManagerTests {
    // MARK: Revalidation

    func testRefreshCachedDeliversTwiceWithNewBytesOnceOn304() async throws {
        let manager = makeManager()
        loader.answer("/r.jpg", .data(Self.jpeg, headers: ["etag": "\"v1\""]))
        _ = try await manager.loadImage(url("/r.jpg"), options: .waitStoreCache)
        cache.memoryCache.removeAll()

        let unchanged = await load(manager, url("/r.jpg"), options: .refreshCached)
        XCTAssertEqual(unchanged.count, 1, "304: the cached image only")
        XCTAssertEqual(try unchanged[0].get().cacheType, .disk)
        XCTAssertEqual(loader.lastRequest?.cachedValidators?.etag, "\"v1\"", "a conditional request")
        XCTAssertFalse(manager.isRunning)

        let newer = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 100, height: 50)), as: .jpeg,
            options: .default)
        loader.answer("/r.jpg", .data(newer, headers: ["etag": "\"v2\""]))
        let changed = await load(manager, url("/r.jpg"), options: [.refreshCached, .waitStoreCache], expectedCalls: 2)
        XCTAssertEqual(changed.count, 2)
        XCTAssertEqual(try changed[0].get().image?.width, 320)
        XCTAssertNotEqual(try changed[0].get().cacheType, .none)
        XCTAssertEqual(try changed[1].get().image?.width, 100)
        XCTAssertEqual(try changed[1].get().cacheType, .none)
        cache.memoryCache.removeAll()
        let answer5 = try await manager.loadImage(url("/r.jpg"))
        XCTAssertEqual(answer5.image?.width, 100, "the new bytes replaced the entry")

        var events: [String] = []
        for try await event in manager.imageEvents(for: url("/r.jpg"), options: .refreshCached) {
            switch event {
            case .result(let result): events.append("result-\(result.cacheType)")
            case .notModified: events.append("notModified")
            case .progress, .preview: break
            }
        }
        XCTAssertEqual(events, ["result-memory", "notModified"])
    }

    func testStaleEntriesRevalidateOnlyWhenAsked() async throws {
        let manager = makeManager()
        loader.answer("/stale.jpg", .data(Self.jpeg, headers: ["etag": "\"a\"", "cache-control": "max-age=0"]))
        _ = try await manager.loadImage(url("/stale.jpg"), options: .waitStoreCache)
        cache.memoryCache.removeAll()
        _ = try await manager.loadImage(url("/stale.jpg"))
        XCTAssertEqual(loader.requestCount("/stale.jpg"), 1, "stale entries are served as they are by default")
        cache.memoryCache.removeAll()
        _ = await load(manager, url("/stale.jpg"), options: .revalidateStaleEntries)
        XCTAssertEqual(loader.requestCount("/stale.jpg"), 2)
        XCTAssertNotNil(loader.lastRequest?.cachedValidators)
    }
}
