import Foundation
import XCTest

@testable import ImageKit

extension ImageManagerTests {
    // MARK: Joining and cancelling

    func testIdenticalLoadsShareOneJob() async throws {
        let manager = makeManager()
        loader.answer("/j.jpg", .data(Self.jpeg))
        loader.setHolds(true)
        let completions = Locked<[Int: [Result<ImageLoadResult, ImageError>]]>([:])
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = 20
        var tasks: [ImageLoadTask] = []
        for index in 0..<20 {
            tasks.append(
                manager.loadImage(with: url("/j.jpg")) { result in
                    completions.withLock { $0[index, default: []].append(result) }
                    done.fulfill()
                })
        }
        let loader = self.loader!
        try await waitUntil { loader.heldCount == 1 }
        tasks[3].cancel()
        XCTAssertTrue(manager.isRunning)
        loader.releaseAll()
        await fulfillment(of: [done], timeout: 10)
        try await Task.sleep(nanoseconds: 50_000_000)
        XCTAssertEqual(loader.requestCount("/j.jpg"), 1, "20 callers, one request")
        let all = completions.withLock { $0 }
        for index in 0..<20 {
            XCTAssertEqual(all[index]?.count, 1, "caller \(index) completes exactly once")
            if index == 3 {
                if case .failure(let error)? = all[index]?.first {
                    XCTAssertEqual(error.code, .cancelled)
                } else {
                    XCTFail()
                }
            } else {
                XCTAssertEqual(try all[index]?.first?.get().image?.width, 320)
            }
        }
        XCTAssertFalse(manager.isRunning)
    }

    func testCancelDuringDownloadStoresNothingAndDoesNotBlacklist() async throws {
        let manager = makeManager()
        loader.answer("/c.jpg", .data(Self.jpeg))
        loader.setHolds(true)
        let calls = Locked<[Result<ImageLoadResult, ImageError>]>([])
        let done = expectation(description: "cancelled")
        let task = manager.loadImage(with: url("/c.jpg")) { result in
            calls.withLock { $0.append(result) }; done.fulfill()
        }
        let loader = self.loader!
        try await waitUntil { loader.heldCount == 1 }
        task.cancel()
        await fulfillment(of: [done], timeout: 5)
        loader.releaseAll()
        try await Task.sleep(nanoseconds: 100_000_000)
        XCTAssertEqual(calls.withLock { $0.count }, 1)
        if case .failure(let error) = calls.withLock({ $0[0] }) {
            XCTAssertEqual(error.code, .cancelled)
        } else {
            XCTFail()
        }
        XCTAssertTrue(task.isCancelled)
        XCTAssertFalse(manager.isFailedURL(url("/c.jpg")))
        let onDisk = await cache.containsImage(CacheKey(url("/c.jpg")))
        XCTAssertEqual(onDisk, .none, "nothing stored for a cancelled load")
        XCTAssertFalse(manager.isRunning)
    }

    func testCancelDuringDiskQueryNeverCallsTheLoader() async throws {
        let gate = GatedCache(cache)
        let manager = ImageManager(cache: gate, loader: loader)
        loader.answer("/g.jpg", .data(Self.jpeg))
        let calls = Locked<[Result<ImageLoadResult, ImageError>]>([])
        let done = expectation(description: "cancelled")
        let task = manager.loadImage(with: url("/g.jpg")) { result in
            calls.withLock { $0.append(result) }; done.fulfill()
        }
        try await waitUntil { gate.waiting > 0 }
        task.cancel()
        await fulfillment(of: [done], timeout: 5)
        gate.open()
        try await Task.sleep(nanoseconds: 100_000_000)
        XCTAssertEqual(calls.withLock { $0.count }, 1)
        XCTAssertEqual(loader.totalRequests, 0)
    }

    /// A plain miss asks memory once before the job, and the job's query once (memory, then disk);
    /// the synchronous query, which could only repeat the memory lookup, is not made. A repeat is
    /// answered by one memory lookup.
    func testAPlainMissAsksTheMemoryCacheOnce() async throws {
        let counting = CountingCache(cache)
        let manager = ImageManager(cache: counting, loader: loader)
        loader.answer("/once.jpg", .data(Self.jpeg))
        // (Stores are not counted here: the disk write may still be under way.)
        func lookups() -> [String: Int] { counting.counts.filter { ["memory", "sync", "query"].contains($0.key) } }
        _ = try await manager.loadImage(url("/once.jpg"))
        XCTAssertEqual(lookups(), ["memory": 1, "query": 1])
        _ = try await manager.loadImage(url("/once.jpg"))
        XCTAssertEqual(lookups(), ["memory": 2, "query": 1])
        // A query that may be answered from disk synchronously still asks for it.
        loader.answer("/sync.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/sync.jpg"), options: .queryDiskDataSync)
        XCTAssertEqual(counting.counts["sync"], 1)
    }

    func testCancelDuringDecodeCompletesOnce() async throws {
        let slow = SlowCoder()
        let coders = ImageCodersManager()
        coders.add(slow)
        let manager = makeManager(coders: coders)
        loader.answer("/slow.jpg", .data(Self.jpeg))
        let calls = Locked<[Result<ImageLoadResult, ImageError>]>([])
        let done = expectation(description: "cancelled")
        let task = manager.loadImage(with: url("/slow.jpg")) { result in
            calls.withLock { $0.append(result) }; done.fulfill()
        }
        try await waitUntil { slow.started.withLock { $0 } }
        task.cancel()
        await fulfillment(of: [done], timeout: 5)
        slow.release()
        try await Task.sleep(nanoseconds: 100_000_000)
        XCTAssertEqual(calls.withLock { $0.count }, 1)
        let stored = await cache.containsImage(CacheKey(url("/slow.jpg")))
        XCTAssertEqual(stored, .none)
    }

    func testTaskCancellationCancelsOnlyThatCaller() async throws {
        let manager = makeManager()
        loader.answer("/t.jpg", .data(Self.jpeg))
        loader.setHolds(true)
        let target = url("/t.jpg")
        let first = Task { try await manager.loadImage(target) }
        let second = Task { try await manager.loadImage(target) }
        let loader = self.loader!
        try await waitUntil { loader.heldCount == 1 && manager.runningCount == 2 }
        first.cancel()
        do { _ = try await first.value; XCTFail("not cancelled") } catch {
            XCTAssertEqual((error as? ImageError)?.code, .cancelled)
        }
        loader.releaseAll()
        let value = try await second.value
        XCTAssertEqual(value.image?.width, 320)
    }

    func testCancelAll() async throws {
        let manager = makeManager()
        loader.setHolds(true)
        for index in 0..<5 { loader.answer("/x\(index)", .data(Self.jpeg)) }
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = 5
        for index in 0..<5 { manager.loadImage(with: url("/x\(index)")) { _ in done.fulfill() } }
        let loader = self.loader!
        try await waitUntil { loader.heldCount == 5 }
        XCTAssertTrue(manager.isRunning)
        manager.cancelAll()
        await fulfillment(of: [done], timeout: 5)
        XCTAssertFalse(manager.isRunning)
        loader.releaseAll()
    }
}
