import Foundation
import XCTest

@testable import ImageKit

final class ImageCachesManagerTests: XCTestCase {
    func make() -> (ImageCachesManager, low: RecordingCache, high: RecordingCache) {
        let low = RecordingCache("low", hits: ["both", "low-only"])
        let high = RecordingCache("high", hits: ["both"])
        return (ImageCachesManager(caches: [low, high]), low, high)
    }

    func testDefaultPolicies() {
        let (manager, _, _) = make()
        XCTAssertEqual(manager.queryPolicy, .serial)
        XCTAssertEqual(manager.storePolicy, .highestOnly)
        XCTAssertEqual(manager.removePolicy, .concurrent)
        XCTAssertEqual(manager.clearPolicy, .concurrent)
        XCTAssertEqual(manager.containsPolicy, .serial)
    }

    func testSerialQueryStopsAtTheFirstHitHighestFirst() async throws {
        let (manager, low, high) = make()
        let both = try await manager.query("both")
        XCTAssertEqual(both.image?.format, .webp, "the highest-priority cache answers")
        XCTAssertEqual(low.calls, [], "serial query stopped at the high cache's hit")
        let lowOnly = try await manager.query("low-only")
        XCTAssertEqual(lowOnly.image?.format, .png)
        XCTAssertEqual(high.calls, ["query", "query"])
        XCTAssertEqual(low.calls, ["query"])
        let miss = try await manager.query("none")
        XCTAssertNil(miss.image)
    }

    func testConcurrentQueryAsksEveryCacheAndPrefersTheHighest() async throws {
        let (manager, low, high) = make()
        manager.queryPolicy = .concurrent
        let both = try await manager.query("both")
        XCTAssertEqual(both.image?.format, .webp)
        XCTAssertEqual(low.calls, ["query"])
        XCTAssertEqual(high.calls, ["query"])
    }

    func testHighestAndLowestOnly() async throws {
        let (manager, low, high) = make()
        manager.queryPolicy = .lowestOnly
        let lowOnly = try await manager.query("low-only")
        XCTAssertEqual(lowOnly.image?.format, .png)
        manager.queryPolicy = .highestOnly
        let missing = try await manager.query("low-only")
        XCTAssertNil(missing.image, "only the high cache is asked")
        XCTAssertEqual(low.calls, ["query"])
        XCTAssertEqual(high.calls, ["query"])

        try await manager.store(nil, data: nil, forKey: "k")
        XCTAssertEqual(high.calls.last, "store")
        XCTAssertFalse(low.calls.contains("store"), "store defaults to highest only")
        manager.storePolicy = .lowestOnly
        try await manager.store(nil, data: nil, forKey: "k")
        XCTAssertEqual(low.calls.last, "store")
    }

    func testSerialAndConcurrentStoreRemoveClearContains() async throws {
        let (manager, low, high) = make()
        manager.storePolicy = .serial
        try await manager.store(nil, data: nil, forKey: "k")
        manager.storePolicy = .concurrent
        try await manager.store(nil, data: nil, forKey: "k")
        await manager.remove("k", cacheType: .all)
        await manager.clear(.all)
        XCTAssertEqual(low.calls, ["store", "store", "remove", "clear"])
        XCTAssertEqual(high.calls, ["store", "store", "remove", "clear"])

        let found = await manager.containsImage("low-only", cacheType: .all)
        XCTAssertEqual(found, .disk)
        manager.containsPolicy = .highestOnly
        let notFound = await manager.containsImage("low-only", cacheType: .all)
        XCTAssertEqual(notFound, .none)
    }

    func testManagersNestAndComposeRealCaches() async throws {
        let directory = TemporaryDirectory("managers")
        defer { directory.remove() }
        let real = try ImageCache(directory: directory.url, configuration: .init(disk: .init(sweepsAtOpen: false)))
        let inner = ImageCachesManager(caches: [real])
        let outer = ImageCachesManager(caches: [RecordingCache("low"), inner])
        let image = TestImages.still(TestImages.gradient(width: 3, height: 3))
        try await outer.store(image, data: nil, forKey: "nested.png")
        let hit = try await outer.query("nested.png")
        XCTAssertEqual(hit.image?.width, 3)
        XCTAssertEqual(hit.cacheType, .memory)
    }
}
