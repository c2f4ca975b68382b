import Foundation
import XCTest

@testable import ImageKit

/// The prefetcher (spec §4.7, PRE-01…04) over a real manager with a scripted, instrumented
/// loader; no sockets.
final class ImagePrefetcherTests: XCTestCase {
    var directory: TemporaryDirectory!
    var loader: MockLoader!
    var manager: ImageManager!
    let queue = DispatchQueue(label: "prefetch.callbacks")

    override func setUp() {
        directory = TemporaryDirectory("prefetcher")
        loader = MockLoader()
        let cache = try! ImageCache(
            directory: directory.url,
            configuration: .init(memory: .init(costLimit: 64 << 20), disk: .init(sweepsAtOpen: false)))
        manager = ImageManager(cache: cache, loader: loader, configuration: .init(callbackQueue: queue))
    }

    override func tearDown() {
        directory.remove()
        loader = nil
        manager = nil
    }

    static var png: Data {
        try! ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 24, height: 16)), as: .png, options: .default)
    }

    func url(_ path: String) -> URL { URL(string: "mock://host\(path)")! }

    /// Answers `count` URLs `/p0.png …` (slowly, so that loads overlap), the paths in `missing` with 404.
    func serve(_ count: Int, missing: Set<Int> = [], delay: TimeInterval = 0.01) -> [URL] {
        let data = Self.png
        for index in 0..<count where !missing.contains(index) {
            loader.answer("/p\(index).png", .data(data, chunks: 2, chunkDelay: delay))
        }
        return (0..<count).map { url("/p\($0).png") }
    }

    /// Runs a prefetch with handlers; returns the progress reports and every completion call.
    func prefetch(
        _ prefetcher: ImagePrefetcher, _ urls: [URL], options: ImageLoadOptions? = nil,
        timeout: TimeInterval = 20
    ) async -> (progress: [ImagePrefetchProgress], completions: [ImagePrefetchSummary]) {
        let progress = Locked<[ImagePrefetchProgress]>([])
        let completions = Locked<[ImagePrefetchSummary]>([])
        let done = expectation(description: "completion")
        prefetcher.prefetch(
            urls, options: options,
            progress: { report in
                progress.withLock { $0.append(report) }
            },
            completion: { summary in
                completions.withLock { $0.append(summary) }
                done.fulfill()
            })
        await fulfillment(of: [done], timeout: timeout)
        try? await Task.sleep(nanoseconds: 50_000_000)  // a second completion would arrive now
        return (progress.withLock { $0 }, completions.withLock { $0 })
    }

    func testConcurrencyLimitCountsAndExactlyOneCompletion() async {
        let prefetcher = ImagePrefetcher(manager: manager)
        XCTAssertEqual(prefetcher.maxConcurrentPrefetchCount, 3, "PRE-02 default")
        let urls = serve(20)
        let (progress, completions) = await prefetch(prefetcher, urls)
        XCTAssertLessThanOrEqual(loader.maxConcurrentLoads, 3, "never more than 3 loads at once")
        XCTAssertGreaterThanOrEqual(loader.maxConcurrentLoads, 2, "the slots are used")
        XCTAssertEqual(progress.map(\.finishedCount), Array(1...20), "progress after each URL, in order")
        XCTAssertTrue(progress.allSatisfy { $0.totalCount == 20 })
        XCTAssertEqual(Set(progress.map(\.url)), Set(urls))
        XCTAssertEqual(completions, [ImagePrefetchSummary(totalCount: 20, finishedCount: 20, skippedCount: 0)])
        XCTAssertEqual(loader.totalRequests, 20)
        for url in urls {
            XCTAssertNotNil(manager.cache.imageFromMemory(forKey: CacheKey(url.absoluteString)), "the cache is warm")
        }
        XCTAssertEqual(prefetcher.runningCount, 0)
    }

    func testRaisingTheLimitStartsMoreAtOnce() async {
        let prefetcher = ImagePrefetcher(manager: manager, maxConcurrentPrefetchCount: 1)
        loader.setHolds(true)
        let urls = serve(6)
        let done = expectation(description: "done")
        prefetcher.prefetch(urls, completion: { _ in done.fulfill() })
        await waitUntil { self.loader.heldCount == 1 }
        prefetcher.maxConcurrentPrefetchCount = 4
        await waitUntil { self.loader.heldCount == 4 }
        XCTAssertEqual(prefetcher.pendingCount, 2)
        loader.releaseAll()
        await fulfillment(of: [done], timeout: 10)
    }

    func testAFailedURLIsFinishedAndSkipped() async {
        let prefetcher = ImagePrefetcher(manager: manager)
        let urls = serve(8, missing: [2, 5])
        let (progress, completions) = await prefetch(prefetcher, urls)
        XCTAssertEqual(completions, [ImagePrefetchSummary(totalCount: 8, finishedCount: 8, skippedCount: 2)])
        XCTAssertEqual(progress.filter { $0.error != nil }.map(\.url).sorted { $0.path < $1.path }, [urls[2], urls[5]])
        XCTAssertEqual(progress.last?.skippedCount, 2)
    }

    func testEmptyListCompletesAtOnceWithZeroes() async {
        let prefetcher = ImagePrefetcher(manager: manager)
        let (progress, completions) = await prefetch(prefetcher, [])
        XCTAssertTrue(progress.isEmpty)
        XCTAssertEqual(completions, [ImagePrefetchSummary(totalCount: 0, finishedCount: 0, skippedCount: 0)])
        let inline = queue.sync { () -> Bool in
            let called = Locked(false)
            let token = prefetcher.prefetch([], completion: { _ in called.withLock { $0 = true } })
            XCTAssertTrue(token.isFinished)
            return called.withLock { $0 }
        }
        XCTAssertTrue(inline, "on the callback queue, an empty call completes before prefetch returns")
    }

    func testOverlappingCallsKeepTheirOwnCountsAndDoNotCancelEachOther() async {
        let prefetcher = ImagePrefetcher(manager: manager)
        let first = serve(10, missing: [3])
        let second = (0..<4).map { url("/q\($0).png") }
        for index in 0..<3 { loader.answer("/q\(index).png", .data(Self.png)) }
        let firstDone = expectation(description: "first")
        let secondDone = expectation(description: "second")
        let summaries = Locked<[String: ImagePrefetchSummary]>([:])
        let firstToken = prefetcher.prefetch(
            first,
            completion: { summary in
                summaries.withLock { $0["first"] = summary }
                firstDone.fulfill()
            })
        let secondToken = prefetcher.prefetch(
            second,
            completion: { summary in
                summaries.withLock { $0["second"] = summary }
                secondDone.fulfill()
            })
        await fulfillment(of: [firstDone, secondDone], timeout: 20)
        XCTAssertEqual(
            summaries.withLock { $0["first"] }, ImagePrefetchSummary(totalCount: 10, finishedCount: 10, skippedCount: 1)
        )
        XCTAssertEqual(
            summaries.withLock { $0["second"] }, ImagePrefetchSummary(totalCount: 4, finishedCount: 4, skippedCount: 1))
        XCTAssertFalse(firstToken.isCancelled)
        XCTAssertFalse(secondToken.isCancelled)
        XCTAssertLessThanOrEqual(loader.maxConcurrentLoads, 3, "the limit holds over all calls together")
    }

    func testCancellingATokenStopsItsPendingLoadsOnly() async {
        let prefetcher = ImagePrefetcher(manager: manager, maxConcurrentPrefetchCount: 2)
        loader.setHolds(true)
        let urls = serve(10)
        let other = (0..<3).map { url("/o\($0).png") }
        for index in 0..<3 { loader.answer("/o\(index).png", .data(Self.png)) }
        let summaries = Locked<[ImagePrefetchSummary]>([])
        let cancelled = expectation(description: "cancelled")
        let token = prefetcher.prefetch(urls, progress: { _ in XCTFail("no progress after the cancel") }) { summary in
            summaries.withLock { $0.append(summary) }
            cancelled.fulfill()
        }
        let otherDone = expectation(description: "other")
        let otherToken = prefetcher.prefetch(other, completion: { _ in otherDone.fulfill() })
        await waitUntil { self.loader.heldCount == 2 }
        token.cancel()
        token.cancel()
        await fulfillment(of: [cancelled], timeout: 10)
        XCTAssertEqual(
            summaries.withLock { $0 },
            [ImagePrefetchSummary(totalCount: 10, finishedCount: 0, skippedCount: 0, isCancelled: true)])
        loader.releaseAll()
        await fulfillment(of: [otherDone], timeout: 10)
        XCTAssertEqual(otherToken.summary, ImagePrefetchSummary(totalCount: 3, finishedCount: 3, skippedCount: 0))
        let prefetchRequests = (0..<10).reduce(0) { $0 + loader.requestCount("/p\($1).png") }
        XCTAssertEqual(prefetchRequests, 2, "no request for the cancelled call's URLs that had not started")
        try? await Task.sleep(nanoseconds: 50_000_000)
        XCTAssertEqual(summaries.withLock { $0.count }, 1, "the completion is told once")
    }

    func testCancelPrefetchingCancelsEveryCall() async {
        let prefetcher = ImagePrefetcher(manager: manager, maxConcurrentPrefetchCount: 1)
        loader.setHolds(true)
        let urls = serve(4)
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 2
        let summaries = Locked<[ImagePrefetchSummary]>([])
        for half in [Array(urls[..<2]), Array(urls[2...])] {
            prefetcher.prefetch(
                half,
                completion: { summary in
                    summaries.withLock { $0.append(summary) }
                    done.fulfill()
                })
        }
        await waitUntil { self.loader.heldCount == 1 }
        prefetcher.cancelPrefetching()
        await fulfillment(of: [done], timeout: 10)
        XCTAssertTrue(summaries.withLock { $0 }.allSatisfy(\.isCancelled))
        XCTAssertEqual(prefetcher.pendingCount, 0)
        loader.releaseAll()
        await waitUntil { prefetcher.runningCount == 0 }
        XCTAssertEqual(loader.totalRequests, 1)
    }

    func testPrefetchLoadsAreLowPriorityAndUserLoadsOvertakeThem() async throws {
        let prefetcher = ImagePrefetcher(manager: manager, maxConcurrentPrefetchCount: 1)
        loader.setHolds(true)
        let urls = serve(5)
        loader.answer("/user.png", .data(Self.png))
        let done = expectation(description: "prefetch")
        prefetcher.prefetch(urls, completion: { _ in done.fulfill() })
        await waitUntil { self.loader.heldCount == 1 }
        XCTAssertEqual(loader.lastRequest?.priority, .low, "PRE-03")
        // A user load queued after the prefetch starts at once, ahead of its 4 waiting URLs.
        let manager = self.manager!
        let userURL = url("/user.png")
        let user = Task { try await manager.loadImage(userURL) }
        await waitUntil { self.loader.heldCount == 2 }
        XCTAssertEqual(loader.lastRequest?.url.path, "/user.png")
        XCTAssertEqual(loader.lastRequest?.priority, .normal)
        XCTAssertEqual(prefetcher.pendingCount, 4)
        loader.releaseAll()
        _ = try await user.value
        await fulfillment(of: [done], timeout: 10)
    }

    func testMemoryHitsOnTheCallbackQueueDoNotNest() async {
        // 2 000 memory hits answered inline: the line is drained in a loop, not by recursion.
        let prefetcher = ImagePrefetcher(manager: manager)
        loader.answer("/hit.png", .data(Self.png))
        _ = try? await manager.loadImage(url("/hit.png"))
        let urls = Array(repeating: url("/hit.png"), count: 2_000)
        let summary = queue.sync { () -> ImagePrefetchSummary? in
            let result = Locked<ImagePrefetchSummary?>(nil)
            prefetcher.prefetch(urls, options: [], completion: { summary in result.withLock { $0 = summary } })
            return result.withLock { $0 }
        }
        XCTAssertEqual(summary, ImagePrefetchSummary(totalCount: 2_000, finishedCount: 2_000, skippedCount: 0))
        XCTAssertEqual(loader.totalRequests, 1)
    }

    func testAsyncFormAndTaskCancellation() async {
        let prefetcher = ImagePrefetcher(manager: manager)
        let urls = serve(5, missing: [0])
        let summary = await prefetcher.prefetch(urls)
        XCTAssertEqual(summary, ImagePrefetchSummary(totalCount: 5, finishedCount: 5, skippedCount: 1))

        loader.setHolds(true)
        let held = (0..<5).map { url("/h\($0).png") }
        let task = Task { await prefetcher.prefetch(held) }
        await waitUntil { self.loader.heldCount == 3 }
        task.cancel()
        let cancelled = await task.value
        XCTAssertTrue(cancelled.isCancelled)
        XCTAssertEqual(cancelled.finishedCount, 0)
        loader.releaseAll()
    }
}
