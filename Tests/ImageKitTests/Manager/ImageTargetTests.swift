import Foundation
import XCTest

@testable import ImageKit

/// The target layer (spec §4.8, VIEW-02…09, VIEW-12) over a real manager with a scripted
/// loader; no sockets.
final class ImageTargetTests: XCTestCase {
    var directory: TemporaryDirectory!
    var loader: MockLoader!
    var cache: ImageCache!
    var manager: ImageManager!
    let queue = DispatchQueue(label: "target.callbacks")
    /// A 1×1 placeholder; loaded images are wider.
    let placeholder = TestImages.still(TestImages.gradient(width: 1, height: 1))

    override func setUp() {
        directory = TemporaryDirectory("targets")
        loader = MockLoader()
        cache = try! ImageCache(
            directory: directory.url,
            configuration: .init(memory: .init(costLimit: 64 << 20), disk: .init(sweepsAtOpen: false)))
        manager = ImageManager(cache: cache, loader: loader, configuration: .init(callbackQueue: queue))
    }

    override func tearDown() {
        directory.remove()
        loader = nil
        cache = nil
        manager = nil
    }

    func url(_ path: String) -> URL { URL(string: "mock://host\(path)")! }

    /// Serves a PNG `width` pixels wide at `path`.
    @discardableResult
    func serve(_ path: String, width: Int, chunks: Int = 1, delay: TimeInterval = 0) -> URL {
        let data = try! ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: width, height: 8)),
            as: .png, options: .default)
        loader.answer(path, .data(data, chunks: chunks, chunkDelay: delay))
        return url(path)
    }

    /// Completion calls of one load, in order.
    final class Calls: @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [(Result<ImageLoadResult, ImageError>, Bool)] = []
        let finished: XCTestExpectation

        init(_ finished: XCTestExpectation) { self.finished = finished }

        func record(_ result: Result<ImageLoadResult, ImageError>, _ isFinal: Bool) {
            lock.lock(); calls.append((result, isFinal)); lock.unlock()
            if isFinal { finished.fulfill() }
        }

        var all: [(Result<ImageLoadResult, ImageError>, Bool)] { lock.lock(); defer { lock.unlock() }; return calls }
        var errorCodes: [ImageError.Code?] {
            all.map { if case .failure(let error) = $0.0 { return error.code } else { return nil } }
        }
    }

    @discardableResult
    func load(
        into target: some ImageTarget, _ url: URL?, options: ImageLoadOptions = [], key: String? = nil,
        context: ImageLoadContext = .init()
    ) -> Calls {
        let calls = Calls(expectation(description: "completion of \(url?.path ?? "nil")"))
        manager.loadImage(
            into: target, url: url, placeholder: placeholder, options: options, context: context,
            operationKey: key,
            completion: { result, isFinal in
                calls.record(result, isFinal)
            })
        return calls
    }

    /// Waits for the completions, then drains the callback queue.
    func wait(_ calls: Calls..., timeout: TimeInterval = 10) async {
        await wait(calls, timeout: timeout)
    }

    func wait(_ calls: [Calls], timeout: TimeInterval = 10) async {
        await fulfillment(of: calls.map(\.finished), timeout: timeout)
        try? await Task.sleep(nanoseconds: 30_000_000)
        queue.sync {}
    }

    // MARK: One live load per target and key

    func testANewerLoadCancelsTheOlderOneAndOnlyItsImageIsSet() async {
        let a = serve("/a.png", width: 20)
        let b = serve("/b.png", width: 30)
        loader.setHolds(true)
        let target = RecordingTarget()
        // Another caller keeps A's transfer alive after the target's A load is cancelled, so A's
        // server does answer, later than B.
        let manager = self.manager!
        let other = Task { try await manager.loadImage(a) }
        let first = load(into: target, a)
        let second = load(into: target, b)
        await waitUntil { self.loader.heldCount == 2 }
        loader.releaseAll()
        await wait(first, second)
        _ = try? await other.value
        XCTAssertEqual(first.errorCodes, [.cancelled], "the replaced load is told cancelled, once")
        XCTAssertEqual(second.all.count, 1)
        XCTAssertEqual(try? second.all.first?.0.get().image?.width, 30)
        XCTAssertFalse(target.widths.contains(20), "A's image is never set")
        XCTAssertEqual(target.widths.last, 30)
        XCTAssertEqual(ImageTargetRegistry.shared.entryCount, 0)
    }

    func testAResultAlreadyQueuedForAReplacedLoadIsDropped() async {
        let a = serve("/a.png", width: 20)
        let b = serve("/b.png", width: 30)
        let target = RecordingTarget()
        // Hold the callback queue so that A's result waits on it, then replace A.
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        let first = load(into: target, a)
        await waitUntil { self.manager.runningCount == 0 }  // A's completion is queued
        let second = load(into: target, b)
        gate.signal()
        await wait(first, second)
        XCTAssertEqual(first.errorCodes, [.cancelled])
        XCTAssertEqual(target.widths, [1, 30], "B's placeholder and B's image; nothing of A")
    }

    func testDifferentKeysAndDifferentTargetsAreIndependent() async {
        let a = serve("/a.png", width: 20)
        let b = serve("/b.png", width: 30)
        let target = RecordingTarget()
        let image = load(into: target, a, key: "image")
        let background = load(into: target, b, key: "background")
        let twin = RecordingTarget()
        let twinLoad = load(into: twin, b)  // same type, default key: a registry of its own
        let other = OtherTarget()
        let otherLoad = load(into: other, a)
        await wait(image, background, twinLoad, otherLoad)
        XCTAssertEqual(image.errorCodes, [nil])
        XCTAssertEqual(background.errorCodes, [nil])
        XCTAssertEqual(twinLoad.errorCodes, [nil])
        XCTAssertEqual(otherLoad.errorCodes, [nil])
        XCTAssertEqual(Set(target.widths.filter { $0 > 1 }), [20, 30])
        XCTAssertEqual(twin.widths.last, 30)
        XCTAssertEqual(target.defaultImageLoadOperationKey, twin.defaultImageLoadOperationKey)
        XCTAssertNotEqual(target.defaultImageLoadOperationKey, other.defaultImageLoadOperationKey)
        XCTAssertTrue(target.defaultImageLoadOperationKey.hasSuffix("RecordingTarget"))
    }

    func testAThousandTargetsLoadingTwiceShowOnlyTheSecondImage() async {
        let a = serve("/a.png", width: 20)
        let b = serve("/b.png", width: 30)
        var targets: [RecordingTarget] = []
        var firsts: [Calls] = []
        var seconds: [Calls] = []
        // As a UI would: both calls on the callback queue, so no delivery can slip between them.
        // A never comes from memory (fromLoaderOnly), so each first load is in flight when the
        // second replaces it; the thousand A loads share one transfer.
        queue.sync {
            for _ in 0..<1000 {
                let target = RecordingTarget()
                targets.append(target)
                firsts.append(load(into: target, a, options: .fromLoaderOnly))
                seconds.append(load(into: target, b))
            }
        }
        await wait(firsts + seconds, timeout: 60)
        for (index, target) in targets.enumerated() {
            XCTAssertEqual(firsts[index].errorCodes, [.cancelled])
            XCTAssertEqual(target.widths.filter { $0 > 1 }, [30], "target \(index)")
        }
        XCTAssertEqual(ImageTargetRegistry.shared.entryCount, 0, "nothing left behind")
    }

    func testNothingIsDeliveredToADeallocatedTarget() async {
        let a = serve("/a.png", width: 20)
        loader.setHolds(true)
        let called = Locked(false)
        weak var gone: RecordingTarget?
        do {
            let target = RecordingTarget()
            gone = target
            manager.loadImage(
                into: target, url: a, placeholder: placeholder, completion: { _, _ in called.withLock { $0 = true } })
            await waitUntil { self.loader.heldCount == 1 }
        }
        XCTAssertNil(gone)
        loader.releaseAll()
        await waitUntil { self.manager.runningCount == 0 }
        queue.sync {}
        XCTAssertFalse(called.withLock { $0 }, "no callback for a deallocated target")
        XCTAssertEqual(ImageTargetRegistry.shared.entryCount, 0)
        XCTAssertNotNil(
            cache.imageFromMemory(forKey: CacheKey(a.absoluteString)), "the load ran to its end for the caches")

        // Targets come and go by the thousand while their loads run: nothing stays.
        loader.setHolds(true)
        for index in 0..<1000 {
            manager.loadImage(into: RecordingTarget(), url: url("/x\(index % 10).png"))
        }
        loader.releaseAll()
        await waitUntil { self.manager.runningCount == 0 }
        queue.sync {}
        XCTAssertEqual(ImageTargetRegistry.shared.entryCount, 0)
    }

    func testCancelImageLoad() async {
        let a = serve("/a.png", width: 20)
        loader.setHolds(true)
        let target = RecordingTarget()
        let calls = load(into: target, a)
        XCTAssertTrue(target.isLoadingImage())
        target.cancelImageLoad()
        XCTAssertFalse(target.isLoadingImage())
        await wait(calls)
        XCTAssertEqual(calls.errorCodes, [.cancelled])
        loader.releaseAll()
        XCTAssertEqual(target.widths.filter { $0 > 1 }, [], "a cancelled load sets nothing")
    }

    // MARK: Placeholder and auto-set rules (VIEW-05, VIEW-07, VIEW-09)

    func testPlaceholderComesFirstThenTheImage() async {
        let a = serve("/a.png", width: 20)
        let target = RecordingTarget()
        await wait(load(into: target, a))
        XCTAssertEqual(target.widths, [1, 20])
        XCTAssertEqual(target.sets.first?.cacheType, ImageCacheType.none)
        XCTAssertNil(target.sets.first?.data)
        XCTAssertEqual(target.sets.first?.url, a)
        XCTAssertNotNil(target.sets.last?.data, "a network image comes with its bytes")

        // Called on the callback queue, the placeholder is set before loadImage returns.
        let inline = queue.sync { () -> [Int] in
            let target = RecordingTarget()
            manager.loadImage(
                into: target, url: serve("/slow.png", width: 40, chunks: 2, delay: 0.05), placeholder: placeholder)
            return target.widths
        }
        XCTAssertEqual(inline, [1])
    }

    func testFailureKeepsThePlaceholderOrSetsItWhenDelayed() async {
        let target = RecordingTarget()
        let failed = load(into: target, url("/missing.png"))
        await wait(failed)
        XCTAssertEqual(failed.errorCodes, [.invalidStatusCode])
        XCTAssertEqual(target.widths, [1], "the placeholder stays, nothing else is set")

        let delayed = RecordingTarget()
        let calls = load(into: delayed, url("/missing2.png"), options: .delayPlaceholder)
        await wait(calls)
        XCTAssertEqual(delayed.widths, [1], "set once, at the failure")
        XCTAssertEqual(delayed.sets.first?.animated, true)

        let loaded = RecordingTarget()
        await wait(load(into: loaded, serve("/a.png", width: 20), options: .delayPlaceholder))
        XCTAssertEqual(loaded.widths, [20], "with an image the delayed placeholder is never set")
    }

    func testNilURLCancelsThePreviousLoadAndFailsWithoutARequest() async {
        let a = serve("/a.png", width: 20)
        loader.setHolds(true)
        let target = RecordingTarget()
        let first = load(into: target, a)
        let second = load(into: target, nil)
        await wait(first, second)
        XCTAssertEqual(first.errorCodes, [.cancelled])
        XCTAssertEqual(second.errorCodes, [.invalidURL])
        XCTAssertEqual(Set(target.widths), [1], "only placeholders are set")
        XCTAssertLessThanOrEqual(
            loader.totalRequests, 1, "the nil URL asks for nothing (A may have been cancelled before its request)")
        XCTAssertEqual(loader.requestCount("/a.png"), loader.totalRequests)
        loader.releaseAll()
    }

    func testAvoidAutoSetImageGivesTheImageToTheCompletionOnly() async {
        let a = serve("/a.png", width: 20)
        let target = RecordingTarget()
        let calls = load(into: target, a, options: .avoidAutoSetImage)
        await wait(calls)
        XCTAssertEqual(try? calls.all.first?.0.get().image?.width, 20)
        XCTAssertEqual(target.widths, [1], "only the placeholder; the image is the caller's to set")
    }

    func testProgressivePreviewsAreSetWithoutCompletionUnlessAvoidAutoSet() async throws {
        let progressive = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 640, height: 480), format: .jpeg), as: .jpeg,
            options: .init(quality: 0.9, progressive: true))
        loader.answer("/prog.jpg", .data(progressive, chunks: 12, chunkDelay: 0.05))
        let target = RecordingTarget()
        let calls = load(into: target, url("/prog.jpg"), options: .progressiveLoad)
        await wait(calls)
        XCTAssertEqual(calls.all.count, 1, "previews are not given to the completion")
        let previews = target.sets.filter { $0.image?.isPreview == true }
        XCTAssertGreaterThan(previews.count, 0)
        XCTAssertTrue(previews.allSatisfy { !$0.animated })
        XCTAssertEqual(target.sets.last?.image?.isPreview, false)
        XCTAssertEqual(target.sets.last?.width, 640)

        let manual = RecordingTarget()
        let manualCalls = load(
            into: manual, url("/prog.jpg"), options: [.progressiveLoad, .avoidAutoSetImage, .fromLoaderOnly])
        await wait(manualCalls)
        let unfinished = manualCalls.all.filter { !$0.1 }
        XCTAssertGreaterThan(unfinished.count, 0, "with avoidAutoSetImage previews reach the completion, not finished")
        XCTAssertEqual(manualCalls.all.last?.1, true)
        XCTAssertEqual(manual.widths, [1])
    }

    // MARK: Progress and transitions (VIEW-06, VIEW-08)

    func testProgressResetsUpdatesAndReadsCompleteAfterACacheHit() async {
        let a = serve("/a.png", width: 20, chunks: 4)
        let target = RecordingTarget()
        let userProgress = Locked<[ImageLoadProgress]>([])
        let done = expectation(description: "done")
        manager.loadImage(
            into: target, url: a, progress: { update in userProgress.withLock { $0.append(update) } },
            completion: { _, _ in done.fulfill() })
        await fulfillment(of: [done], timeout: 10)
        let progress = target.progress
        XCTAssertEqual(progress.first, ImageTargetProgress(completedUnitCount: 0, totalUnitCount: 0))
        XCTAssertEqual(progress.count, 5)
        XCTAssertEqual(progress.last?.fractionCompleted, 1)
        XCTAssertEqual(
            progress.dropFirst().map(\.completedUnitCount), userProgress.withLock { $0 }.map(\.receivedBytes))

        let hit = RecordingTarget()
        await wait(load(into: hit, a))
        XCTAssertEqual(
            hit.progress, [ImageTargetProgress(completedUnitCount: 0, totalUnitCount: 0), .unknownCompleted])

        XCTAssertEqual(ImageTargetProgress(completedUnitCount: 5, totalUnitCount: 0).fractionCompleted, 0)
        XCTAssertEqual(ImageTargetProgress(completedUnitCount: 15, totalUnitCount: 10).fractionCompleted, 1)
        XCTAssertEqual(ImageTargetProgress(completedUnitCount: -3, totalUnitCount: 10).fractionCompleted, 0)
        XCTAssertEqual(ImageTargetProgress(completedUnitCount: 5, totalUnitCount: -1).fractionCompleted, 0)
    }

    func testTransitionFlagFollowsWhereTheImageCameFrom() async {
        let a = serve("/a.png", width: 20)
        func lastSet(_ options: ImageLoadOptions = []) async -> RecordingTarget.SetCall? {
            let target = RecordingTarget()
            await wait(load(into: target, a, options: options))
            return target.sets.last
        }
        var set = await lastSet(.waitStoreCache)
        XCTAssertEqual(set?.cacheType, ImageCacheType.none)
        XCTAssertEqual(set?.animated, true, "network")
        set = await lastSet()
        XCTAssertEqual(set?.cacheType, .memory)
        XCTAssertEqual(set?.animated, false, "memory")
        set = await lastSet(.forceTransition)
        XCTAssertEqual(set?.animated, true, "memory with forceTransition")
        await cache.clear(.memory)
        set = await lastSet()
        XCTAssertEqual(set?.cacheType, .disk)
        XCTAssertEqual(set?.animated, true, "asynchronous disk hit")
        await cache.clear(.memory)
        set = await lastSet(.queryDiskDataSync)
        XCTAssertEqual(set?.cacheType, .disk)
        XCTAssertEqual(set?.animated, false, "synchronous disk hit")
    }
}
