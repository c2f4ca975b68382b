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

    // MARK: Memory and disk

    func testMemoryHitIsSynchronousOnTheCallbackQueue() async throws {
        let queue = DispatchQueue(label: "test.callbacks")
        let manager = makeManager(.init(callbackQueue: queue))
        loader.answer("/m.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/m.jpg"), options: .waitStoreCache)
        let result = try await manager.loadImage(url("/m.jpg"))
        XCTAssertEqual(result.cacheType, .memory)
        XCTAssertNil(result.data, "a memory hit carries no data by default")

        let inline = queue.sync { () -> Bool in
            let called = Locked(false)
            manager.loadImage(with: url("/m.jpg")) { _ in called.withLock { $0 = true } }
            return called.withLock { $0 }
        }
        XCTAssertTrue(inline, "started on the callback queue, a memory hit completes before loadImage returns")

        let called = Locked(false)
        let done = expectation(description: "async")
        manager.loadImage(with: url("/m.jpg")) { result in
            XCTAssertEqual(try? result.get().cacheType, .memory)
            called.withLock { $0 = true }
            done.fulfill()
        }
        // Started elsewhere, it is delivered on the callback queue (asynchronously).
        await fulfillment(of: [done], timeout: 5)
        XCTAssertTrue(called.withLock { $0 })
        XCTAssertEqual(loader.requestCount("/m.jpg"), 1)

        let withData = try await manager.loadImage(url("/m.jpg"), options: [.queryMemoryData])
        XCTAssertEqual(withData.cacheType, .memory)
        XCTAssertEqual(withData.data, Self.jpeg, "queryMemoryData reads the disk bytes on a memory hit")
    }

    func testDiskHitIsPromotedUnlessStoreTypeExcludesMemory() async throws {
        let manager = makeManager()
        loader.answer("/d.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/d.jpg"), options: .waitStoreCache)
        cache.memoryCache.removeAll()
        var noPromotion = ImageLoadContext()
        noPromotion.storeCacheType = .disk
        let first = try await manager.loadImage(url("/d.jpg"), context: noPromotion)
        XCTAssertEqual(first.cacheType, .disk)
        XCTAssertEqual(first.data, Self.jpeg)
        let answer1 = try await manager.loadImage(url("/d.jpg"), context: noPromotion)
        XCTAssertEqual(answer1.cacheType, .disk, "not promoted")
        let answer2 = try await manager.loadImage(url("/d.jpg"))
        XCTAssertEqual(answer2.cacheType, .disk)
        let answer3 = try await manager.loadImage(url("/d.jpg"))
        XCTAssertEqual(answer3.cacheType, .memory, "a disk hit is promoted to memory")
        XCTAssertEqual(loader.requestCount("/d.jpg"), 1)
    }

    func testQueryDiskDataSyncCompletesBeforeReturning() async throws {
        let queue = DispatchQueue(label: "test.sync")
        let manager = makeManager(.init(callbackQueue: queue))
        loader.answer("/s.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/s.jpg"), options: .waitStoreCache)
        cache.memoryCache.removeAll()
        let cacheType = queue.sync { () -> ImageCacheType? in
            let found = Locked<ImageCacheType?>(nil)
            manager.loadImage(with: url("/s.jpg"), options: .queryDiskDataSync) { result in
                found.withLock { $0 = try? result.get().cacheType }
            }
            return found.withLock { $0 }
        }
        XCTAssertEqual(cacheType, .disk)
    }

    func testQueryMemoryDataSyncReadsTheBytesBeforeReturning() async throws {
        let queue = DispatchQueue(label: "test.memory-data-sync")
        let manager = makeManager(.init(callbackQueue: queue))
        loader.answer("/md.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/md.jpg"), options: .waitStoreCache)
        let bytes = queue.sync { () -> Int? in
            let found = Locked<Int?>(nil)
            manager.loadImage(with: url("/md.jpg"), options: [.queryMemoryData, .queryMemoryDataSync]) { result in
                XCTAssertEqual(try? result.get().cacheType, .memory)
                found.withLock { $0 = try? result.get().data?.count }
            }
            return found.withLock { $0 }
        }
        XCTAssertEqual(bytes, Self.jpeg.count, "the memory hit and its disk bytes, before loadImage returned")
    }

    func testQueryNoneAndFromCacheOnly() async throws {
        let manager = makeManager()
        loader.answer("/q.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/q.jpg"))
        var none = ImageLoadContext()
        none.queryCacheType = .none
        let fetched = try await manager.loadImage(url("/q.jpg"), context: none)
        XCTAssertEqual(fetched.cacheType, .none)
        XCTAssertEqual(loader.requestCount("/q.jpg"), 2, "queryCacheType none goes to the loader")
        let nothing = try await manager.loadImage(url("/q.jpg"), options: .fromCacheOnly, context: none)
        XCTAssertNil(nothing.image)
        XCTAssertEqual(loader.requestCount("/q.jpg"), 2)

        let miss = await load(manager, url("/never.jpg"), options: .fromCacheOnly)
        XCTAssertEqual(miss.count, 1)
        XCTAssertNil(try miss[0].get().image, "a fromCacheOnly miss is no image and no error")
        XCTAssertEqual(loader.requestCount("/never.jpg"), 0)
        XCTAssertFalse(manager.isRunning)
    }

    func testFromLoaderOnlyDownloadsAndStores() async throws {
        let manager = makeManager()
        loader.answer("/l.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/l.jpg"), options: .waitStoreCache)
        let again = try await manager.loadImage(url("/l.jpg"), options: [.fromLoaderOnly, .waitStoreCache])
        XCTAssertEqual(again.cacheType, .none)
        XCTAssertEqual(loader.requestCount("/l.jpg"), 2)
        let answer4 = try await manager.loadImage(url("/l.jpg"))
        XCTAssertEqual(answer4.cacheType, .memory)
    }

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

    // MARK: Hooks and options

    func testShouldDownloadVetoAndOptionsProcessor() async throws {
        let vetoing = makeManager(.init(shouldDownload: { _ in false }))
        loader.answer("/v.gif", .data(Self.gif))
        let vetoed = try await vetoing.loadImage(url("/v.gif"))
        XCTAssertNil(vetoed.image)
        XCTAssertEqual(loader.totalRequests, 0)

        let processor = ImageLoadOptionsProcessor { _, options, context in
            (options.union(.decodeFirstFrameOnly), context)
        }
        let manager = makeManager(processor: processor)
        let still = try await manager.loadImage(url("/v.gif"))
        XCTAssertEqual(still.image?.frames.count, 1, "the processor's decodeFirstFrameOnly took effect")
        let full = try await makeManager().loadImage(url("/v.gif"), options: .fromLoaderOnly)
        XCTAssertEqual(full.image?.frameCount, 3)
    }

    func testWaitStoreCacheWritesTheDiskBeforeCompleting() async throws {
        let manager = makeManager()
        loader.answer("/w.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/w.jpg"), options: .waitStoreCache)
        XCTAssertEqual(cache.diskCache.data(forKey: CacheKey(url("/w.jpg")).identity), Self.jpeg)
    }

    func testPriorityReachesTheLoader() async throws {
        let manager = makeManager()
        loader.answer("/p.jpg", .data(Self.jpeg))
        _ = try await manager.loadImage(url("/p.jpg"), options: [.highPriority, .fromLoaderOnly])
        XCTAssertEqual(loader.lastRequest?.priority, .high)
        _ = try await manager.loadImage(
            url("/p.jpg"), options: [.lowPriority, .fromLoaderOnly, .allowInvalidSSLCertificates])
        XCTAssertEqual(loader.lastRequest?.priority, .low)
        XCTAssertEqual(loader.lastRequest?.allowsInvalidSSLCertificates, true)
    }

    func testAvoidDecodeImageCarriesBytes() async throws {
        let manager = makeManager()
        loader.answer("/a.png", .data(Self.png))
        let result = try await manager.loadImage(url("/a.png"), options: [.avoidDecodeImage, .waitStoreCache])
        XCTAssertNil(result.image)
        XCTAssertEqual(result.data, Self.png)
        XCTAssertEqual(result.format, .png)
        let again = try await manager.loadImage(url("/a.png"), options: .avoidDecodeImage)
        XCTAssertEqual(again.cacheType, .disk)
        XCTAssertEqual(again.data, Self.png)
        XCTAssertEqual(loader.requestCount("/a.png"), 1)
    }

    // MARK: Variants

    func testTransformerStoresVariantAndOriginalBytesThenFallsBackToTheOriginal() async throws {
        let manager = makeManager()
        loader.answer("/photo.jpg", .data(Self.jpeg))
        var context = ImageLoadContext()
        context.transformer = HalfSize()
        let result = try await manager.loadImage(url("/photo.jpg"), options: .waitStoreCache, context: context)
        XCTAssertEqual(result.image?.width, 160)
        XCTAssertEqual(result.data, Self.jpeg, "the transformed image comes with the original data")
        XCTAssertEqual(result.cacheKey.rendered, "mock://host/photo-Half.jpg")
        let original = CacheKey(url("/photo.jpg"))
        XCTAssertEqual(cache.diskCache.data(forKey: original.identity), Self.jpeg, "original bytes under the plain key")
        XCTAssertNil(
            cache.imageFromMemory(forKey: original),
            "the original's decode is not in memory (originalStoreCacheType disk)")
        XCTAssertEqual(cache.imageFromMemory(forKey: result.cacheKey)?.width, 160)

        // Another transformer and a thumbnail: made from the disk bytes, no request.
        var other = ImageLoadContext()
        other.transformer = ImagePipelineTransformer([HalfSize(), HalfSize()])
        let quarter = try await manager.loadImage(url("/photo.jpg"), options: .waitStoreCache, context: other)
        XCTAssertEqual(quarter.image?.width, 80)
        XCTAssertEqual(quarter.cacheType, .disk)
        var thumbnail = ImageLoadContext()
        thumbnail.thumbnailPixelSize = PixelSize(64)
        let thumb = try await manager.loadImage(url("/photo.jpg"), options: .waitStoreCache, context: thumbnail)
        XCTAssertEqual(thumb.image?.width, 64)
        XCTAssertEqual(loader.requestCount("/photo.jpg"), 1, "variants come from the cached original")
        XCTAssertNotNil(
            cache.diskCache.data(forKey: thumb.cacheKey.identity), "the variant is stored under its own key")
        XCTAssertEqual(cache.diskCache.data(forKey: original.identity), Self.jpeg, "the original entry is untouched")

        // A full-size load after a thumbnail-first load: distinct keys.
        cache.memoryCache.removeAll()
        let full = try await manager.loadImage(url("/photo.jpg"))
        XCTAssertEqual(full.image?.width, 320)
    }

    func testThumbnailFirstKeepsOriginalBytes() async throws {
        let manager = makeManager()
        loader.answer("/t.jpg", .data(Self.jpeg))
        var thumbnail = ImageLoadContext()
        thumbnail.thumbnailPixelSize = PixelSize(100)
        let thumb = try await manager.loadImage(url("/t.jpg"), options: .waitStoreCache, context: thumbnail)
        XCTAssertEqual(thumb.image?.width, 100)
        XCTAssertTrue(thumb.cacheKey.rendered.contains("Thumbnail({100.000000,100.000000},1)"))
        XCTAssertEqual(cache.diskCache.data(forKey: CacheKey(url("/t.jpg")).identity), Self.jpeg)
        XCTAssertNil(
            cache.imageFromMemory(forKey: CacheKey(url("/t.jpg"))), "a thumbnail never lands on the original's entry")
        let full = try await manager.loadImage(url("/t.jpg"))
        XCTAssertEqual(full.image?.width, 320)
        XCTAssertEqual(full.cacheType, .disk)
        XCTAssertEqual(loader.requestCount("/t.jpg"), 1)
    }

    func testAnimatedImagesAreTransformedOnlyWhenAsked() async throws {
        let manager = makeManager()
        loader.answer("/anim.gif", .data(Self.gif))
        var context = ImageLoadContext()
        context.transformer = HalfSize()
        let untouched = try await manager.loadImage(url("/anim.gif"), context: context)
        XCTAssertEqual(untouched.image?.width, 32)
        XCTAssertEqual(untouched.image?.frameCount, 3)
        let transformed = try await manager.loadImage(
            url("/anim.gif"), options: [.transformAnimatedImage, .fromLoaderOnly], context: context)
        XCTAssertEqual(transformed.image?.width, 16)
    }

    func testTransformerReturningNilIsNoImageNoError() async throws {
        let manager = makeManager(transformer: Declining())
        loader.answer("/n.jpg", .data(Self.jpeg))
        let result = try await manager.loadImage(url("/n.jpg"))
        XCTAssertNil(result.image)
    }

    func testCacheSerializerDecidesTheDiskBytes() async throws {
        let serializer = ImageCacheSerializer { image, _, _ in
            try? ImageCodersManager.shared.encode(image, as: .png, options: .default)
        }
        let manager = makeManager(serializer: serializer)
        let webp = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 40, height: 30)), as: .webp,
            options: .init(quality: 0.8))
        loader.answer("/w.webp", .data(webp))
        _ = try await manager.loadImage(url("/w.webp"), options: .waitStoreCache)
        let stored = try XCTUnwrap(cache.diskCache.data(forKey: CacheKey(url("/w.webp")).identity))
        XCTAssertEqual(ImageFormat.detect(stored), .png)
    }

    func testScaleDownIsPartOfTheKey() async throws {
        let manager = makeManager()
        loader.answer("/big.jpg", .data(Self.jpeg))
        var context = ImageLoadContext()
        context.scaleDownLimitBytes = 100 * 100 * 4
        let small = try await manager.loadImage(
            url("/big.jpg"), options: [.scaleDownLargeImages, .waitStoreCache], context: context)
        XCTAssertLessThanOrEqual(small.image!.width * small.image!.height, 100 * 100)
        XCTAssertFalse(small.cacheKey.isOriginal)
        let full = try await manager.loadImage(url("/big.jpg"))
        XCTAssertEqual(full.image?.width, 320)
    }

    // MARK: Bad caches

    func testCorruptDiskEntryIsRefetched() async throws {
        let manager = makeManager()
        loader.answer("/bad-entry.jpg", .data(Self.jpeg))
        let key = CacheKey(url("/bad-entry.jpg"))
        try cache.diskCache.store(Self.jpeg.prefix(200), forKey: key.identity, expiryDate: nil, http: nil)
        let result = try await manager.loadImage(url("/bad-entry.jpg"), options: .waitStoreCache)
        XCTAssertEqual(result.cacheType, .none)
        XCTAssertEqual(result.image?.width, 320)
        XCTAssertEqual(cache.diskCache.data(forKey: key.identity), Self.jpeg, "the entry was replaced")
    }

    func testUnwritableCacheStillDeliversAndReportsTheError() async throws {
        let reported = Locked<[ImageError]>([])
        let manager = makeManager(.init(storeErrorHandler: { error, _ in reported.withLock { $0.append(error) } }))
        // A file where the entries directory should be: even root cannot write there.
        let entries = (cache.diskCache as! DiskCache).entriesDirectory
        try FileManager.default.removeItem(atPath: entries)
        FileManager.default.createFile(atPath: entries, contents: Data("x".utf8))
        loader.answer("/ro.jpg", .data(Self.jpeg))
        let result = try await manager.loadImage(url("/ro.jpg"), options: .waitStoreCache)
        XCTAssertEqual(result.image?.width, 320)
        XCTAssertEqual(result.storeError?.code, .ioError)
        XCTAssertEqual(reported.withLock { $0.count }, 1)
    }

    // MARK: Progressive and events

    func testProgressiveLoadDeliversPreviewsThenTheFinalImage() async throws {
        let manager = makeManager()
        let progressive = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 640, height: 480), format: .jpeg), as: .jpeg,
            options: .init(quality: 0.9, progressive: true))
        loader.answer("/prog.jpg", .data(progressive, chunks: 12, chunkDelay: 0.05))
        var previews = 0
        var progressEvents = 0
        var final: ImageLoadResult?
        for try await event in manager.imageEvents(for: url("/prog.jpg"), options: .progressiveLoad) {
            switch event {
            case .preview(let image):
                XCTAssertNil(final, "no preview after the final image")
                XCTAssertTrue(image.isPreview)
                previews += 1
            case .progress: progressEvents += 1
            case .result(let result): final = result
            case .notModified: XCTFail("not a revalidation")
            }
        }
        XCTAssertGreaterThan(previews, 0)
        XCTAssertEqual(progressEvents, 12)
        XCTAssertEqual(final?.image?.width, 640)
        XCTAssertFalse(final?.image?.isPreview ?? true)
    }

    func testStringKeysAndURLsAtCacheCallSites() async throws {
        let urlString = "https://example.com/string-key.png"
        let image = TestImages.still(TestImages.gradient(width: 8, height: 8))
        try await cache.store(image, data: nil, forKey: urlString)
        let byString = try await cache.query(urlString)
        XCTAssertNotNil(byString.image)
        let byURL = try await cache.query(URL(string: urlString)!)
        XCTAssertNotNil(byURL.image)
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

/// Halves width and height with the resampler.
struct HalfSize: ImageTransforming {
    var transformerKey: String { "Half" }
    func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        let options = ImageDecodingOptions(
            thumbnailPixelSize: PixelSize(width: image.width / 2, height: image.height / 2),
            preservesAspectRatio: false)
        let data = try ImageCodersManager.shared.encode(image, as: .png, options: .default)
        return try ImageCodersManager.shared.decode(data, options: options)
    }
}

struct Declining: ImageTransforming {
    var transformerKey: String { "Declining" }
    func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? { nil }
}

/// A JPEG "decoder" that blocks until released, to cancel a load while it decodes.
final class SlowCoder: ImageCoding {
    let started = Locked(false)
    private let gate = DispatchSemaphore(value: 0)
    func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .jpeg }
    func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        started.withLock { $0 = true }
        gate.wait()
        return try JPEGCoder().decode(data, options: options)
    }
    func release() { gate.signal() }
    func canEncode(_ format: ImageFormat) -> Bool { false }
    func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError) -> Data
    {
        throw ImageError(.encodingFailed, "no")
    }
}

/// A cache whose queries wait until `open()`, to cancel a load during its cache query.
final class GatedCache: ImageCaching {
    let inner: ImageCache
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    init(_ inner: ImageCache) { self.inner = inner }
    var waiting: Int { state.withLock { $0.waiters.count } }
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
    func query(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) async throws(ImageError) -> ImageCacheQueryResult {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
        if Task.isCancelled { throw ImageError(.cancelled, "cancelled") }
        return try await inner.query(key, cacheType: cacheType, options: options, decoding: decoding)
    }
    func store(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType, http: HTTPCacheHeaders?
    ) async throws(ImageError) {
        try await inner.store(image, data: data, forKey: key, cacheType: cacheType, http: http)
    }
    func storeData(_ data: Data, forKey key: CacheKey, http: HTTPCacheHeaders?) async throws(ImageError) {
        try await inner.storeData(data, forKey: key, http: http)
    }
    func remove(_ key: CacheKey, cacheType: ImageCacheType) async { await inner.remove(key, cacheType: cacheType) }
    func clear(_ cacheType: ImageCacheType) async { await inner.clear(cacheType) }
    func containsImage(_ key: CacheKey, cacheType: ImageCacheType) async -> ImageCacheType {
        await inner.containsImage(key, cacheType: cacheType)
    }
}

/// An ``ImageCache`` that counts what the manager asks of it.
final class CountingCache: ImageCaching {
    let inner: ImageCache
    private let tally = Locked<[String: Int]>([:])
    init(_ inner: ImageCache) { self.inner = inner }
    var counts: [String: Int] { tally.withLock { $0 } }
    private func count(_ name: String) { tally.withLock { $0[name, default: 0] += 1 } }

    func imageFromMemory(forKey key: CacheKey) -> DecodedImage? {
        count("memory")
        return inner.imageFromMemory(forKey: key)
    }
    func querySynchronously(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) -> Result<ImageCacheQueryResult, ImageError>? {
        count("sync")
        return inner.querySynchronously(key, cacheType: cacheType, options: options, decoding: decoding)
    }
    func query(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) async throws(ImageError) -> ImageCacheQueryResult {
        count("query")
        return try await inner.query(key, cacheType: cacheType, options: options, decoding: decoding)
    }
    func store(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType, http: HTTPCacheHeaders?
    ) async throws(ImageError) {
        count("store")
        try await inner.store(image, data: data, forKey: key, cacheType: cacheType, http: http)
    }
    func storeData(_ data: Data, forKey key: CacheKey, http: HTTPCacheHeaders?) async throws(ImageError) {
        count("storeData")
        try await inner.storeData(data, forKey: key, http: http)
    }
    func refreshMetadata(forKey key: CacheKey, http: HTTPCacheHeaders) async -> Bool {
        await inner.refreshMetadata(forKey: key, http: http)
    }
    func remove(_ key: CacheKey, cacheType: ImageCacheType) async { await inner.remove(key, cacheType: cacheType) }
    func clear(_ cacheType: ImageCacheType) async { await inner.clear(cacheType) }
    func containsImage(_ key: CacheKey, cacheType: ImageCacheType) async -> ImageCacheType {
        await inner.containsImage(key, cacheType: cacheType)
    }
}
