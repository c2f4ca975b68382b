import Foundation
import XCTest

@testable import ImageKit

final class MemoryCacheTests: XCTestCase {
    /// An image costing `bytesPerRow × height`: with width 16 (64-byte rows) the cost is 64 × height.
    func image(height: Int = 4, frames: Int = 1) -> DecodedImage {
        DecodedImage(
            frames: (0..<frames).map { _ in ImageFrame(bitmap: TestImages.gradient(width: 16, height: height)) },
            format: .png)
    }

    func testLRUOrderAndCountLimit() {
        let cache = MemoryCache(configuration: .init(costLimit: 0, countLimit: 3))
        for key in ["a", "b", "c"] { cache.setImage(image(), forKey: key) }
        XCTAssertEqual(cache.keysByRecency, ["c", "b", "a"])
        XCTAssertNotNil(cache.image(forKey: "a"))  // a becomes most recent
        XCTAssertEqual(cache.keysByRecency, ["a", "c", "b"])
        cache.setImage(image(), forKey: "d")  // evicts b, the least recently used
        XCTAssertEqual(cache.keysByRecency, ["d", "a", "c"])
        XCTAssertNil(cache.image(forKey: "b"))
        XCTAssertEqual(cache.count, 3)
    }

    func testCostLimitIsStrict() {
        let entry = image(height: 10)  // 640 bytes
        XCTAssertEqual(entry.cost, 640)
        let cache = MemoryCache(configuration: .init(costLimit: 6400 * 2, maxEntryCostFraction: 1))
        for index in 0..<50 {
            cache.setImage(entry, forKey: "k\(index)")
            XCTAssertLessThanOrEqual(cache.totalCost, 12800)
        }
        XCTAssertEqual(cache.count, 20)
        XCTAssertEqual(cache.keysByRecency.first, "k49")
        XCTAssertNil(cache.image(forKey: "k29"))
        XCTAssertNotNil(cache.image(forKey: "k30"))
    }

    func testAnimatedCostCountsFrames() {
        let animated = image(height: 10, frames: 3)
        XCTAssertEqual(animated.cost, 640 * 3)
        let cache = MemoryCache(configuration: .init(costLimit: 100_000))
        cache.setImage(animated, forKey: "gif")
        XCTAssertEqual(cache.totalCost, 1920)
    }

    func testEntriesOverTheCapAreNotStored() {
        let cache = MemoryCache(configuration: .init(costLimit: 6400))  // cap: 10 % = 640
        cache.setImage(image(height: 10), forKey: "fits")
        cache.setImage(image(height: 11), forKey: "too-big")
        XCTAssertNotNil(cache.image(forKey: "fits"))
        XCTAssertNil(cache.image(forKey: "too-big"))
        XCTAssertEqual(cache.totalCost, 640)
        // Replacing an entry with one over the cap removes the old one too.
        cache.setImage(image(height: 20), forKey: "fits")
        XCTAssertNil(cache.image(forKey: "fits"))
        XCTAssertEqual(cache.totalCost, 0)
    }

    func testReplacingAKeyUpdatesCost() {
        let cache = MemoryCache(configuration: .init(costLimit: 0))
        cache.setImage(image(height: 2), forKey: "a")
        cache.setImage(image(height: 8), forKey: "a")
        XCTAssertEqual(cache.count, 1)
        XCTAssertEqual(cache.totalCost, 512)
    }

    func testTrimAndRemove() {
        let cache = MemoryCache(configuration: .init(costLimit: 0))
        for key in ["a", "b", "c", "d"] { cache.setImage(image(height: 10), forKey: key) }
        cache.trim(toCost: 1300)
        XCTAssertEqual(cache.keysByRecency, ["d", "c"])
        cache.removeImage(forKey: "d")
        XCTAssertEqual(cache.keysByRecency, ["c"])
        cache.removeAll()
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.totalCost, 0)
    }

    func testWeakCacheRevivesImagesStillInUse() {
        let cache = MemoryCache(configuration: .init(costLimit: 0, countLimit: 1, usesWeakCache: true))
        var held: DecodedImage? = image(frames: 2)
        held!.frames[1].duration = 0.25
        cache.setImage(held!, forKey: "held")
        cache.setImage(image(), forKey: "other")  // evicts "held" from the LRU
        XCTAssertEqual(cache.keysByRecency, ["other"])
        let revived = cache.image(forKey: "held")
        XCTAssertNotNil(revived, "still referenced by the test, so the weak cache hands it back")
        XCTAssertTrue(revived?.bitmap === held?.bitmap)
        XCTAssertEqual(revived?.frames[1].duration, 0.25)
        XCTAssertEqual(cache.keysByRecency.first, "held", "revived images go back into the LRU")

        cache.removeAll()
        XCTAssertNotNil(cache.image(forKey: "held"), "removeAll keeps the weak table (MEM-04)")
        cache.removeAll()
        held = nil
        _ = revived
        XCTAssertNil(cache.image(forKey: "other"))
    }

    func testWeakCacheForgetsReleasedImages() {
        let cache = MemoryCache(configuration: .init(costLimit: 0, countLimit: 1, usesWeakCache: true))
        cache.setImage(image(), forKey: "gone")
        cache.setImage(image(), forKey: "other")
        XCTAssertNil(cache.image(forKey: "gone"), "nobody holds it any more")

        let off = MemoryCache(configuration: .init(costLimit: 0, countLimit: 1, usesWeakCache: false))
        let held = image()
        off.setImage(held, forKey: "held")
        off.setImage(image(), forKey: "other")
        XCTAssertNil(off.image(forKey: "held"), "weak cache off: evicted means gone")
        _ = held
    }

    func testConcurrentUseKeepsLimits() {
        let cache = MemoryCache(
            configuration: .init(costLimit: 64 * 4 * 50, countLimit: 0, maxEntryCostFraction: 1, usesWeakCache: true))
        let images = (0..<8).map { _ in image() }
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for step in 0..<2000 {
                let key = "k\((worker * 31 + step) % 200)"
                if step % 3 == 0 { cache.setImage(images[worker], forKey: key) } else { _ = cache.image(forKey: key) }
                if step % 500 == 0 { cache.trim(toCost: 64 * 4 * 25) }
            }
        }
        XCTAssertLessThanOrEqual(cache.totalCost, 64 * 4 * 50)
        XCTAssertEqual(cache.totalCost, cache.count * 256)
    }

    func testCgroupLimitParsing() throws {
        XCTAssertEqual(MemoryLimits.cgroupV2Path("0::/system.slice/app.service\n"), "/system.slice/app.service")
        XCTAssertNil(MemoryLimits.cgroupV2Path("12:memory:/docker/abc\n"))
        XCTAssertEqual(MemoryLimits.parseMemoryMax("536870912\n"), 536_870_912)
        XCTAssertNil(MemoryLimits.parseMemoryMax("max\n"))

        // A fixture hierarchy: the leaf is unlimited, its parent has 512 MiB.
        let root = TemporaryDirectory("cgroup")
        defer { root.remove() }
        let leaf = root.url.appendingPathComponent("kubepods/pod1/app")
        try FileManager.default.createDirectory(at: leaf, withIntermediateDirectories: true)
        try "max\n".write(to: leaf.appendingPathComponent("memory.max"), atomically: true, encoding: .utf8)
        try "536870912\n".write(
            to: root.url.appendingPathComponent("kubepods/pod1/memory.max"), atomically: true, encoding: .utf8)
        let membership = root.url.appendingPathComponent("cgroup")
        try "0::/kubepods/pod1/app\n".write(to: membership, atomically: true, encoding: .utf8)
        let limit = MemoryLimits.availableMemory(
            procSelfCgroup: membership.path, cgroupRoot: root.path, physicalMemory: 64 << 30)
        XCTAssertEqual(limit, 536_870_912)
        // No cgroup v2 line: physical memory.
        try "5:memory:/x\n".write(to: membership, atomically: true, encoding: .utf8)
        XCTAssertEqual(
            MemoryLimits.availableMemory(
                procSelfCgroup: membership.path, cgroupRoot: root.path, physicalMemory: 1 << 30), 1 << 30)
        // The default cost limit is 15 % of what is available here.
        XCTAssertEqual(MemoryLimits.defaultCacheCostLimit, Int(Double(MemoryLimits.availableMemory()) * 0.15))
    }
}
