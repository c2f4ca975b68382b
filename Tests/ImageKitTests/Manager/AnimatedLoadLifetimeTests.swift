import Foundation
import XCTest

@testable import ImageKit

/// Animated sources through the manager, thousands of times (issue 45): every lazy animation,
/// its source bytes and every manager are released once the loads and their jobs have ended,
/// with caches on and off. The verdict is twofold: weak references here (an animation or a
/// manager still alive after its jobs ended is a retain cycle or an unbalanced retain), and
/// LeakSanitizer's report at the end of `make test-asan`'s process.
///
/// Why the manager must be *gone* before a leak check, and not merely done: `Data` keeps its
/// representation's tag in the spare bits of its storage pointer, so LeakSanitizer cannot see a
/// heap object's reference to a `Data` and reports live bytes as "Direct leak of 65 bytes" (the
/// `__DataStorage`) plus the bytes themselves. That is what `FuzzManager` reported when its
/// leak check ran while the job's task, which outlives the completion by a few instructions,
/// still held the manager and the cached animation.
final class AnimatedLoadLifetimeTests: XCTestCase {
    /// Issue 45's FuzzManager finding as the fuzzer saw it (its flags byte first; committed with
    /// the other findings): an '@' and then an animated GIF of four 100×100 frames whose first
    /// frame's data ends early.
    /// Read on each use, never kept in a global: a `Data` in a static would itself be reported by
    /// LeakSanitizer at exit, for the reason above.
    static var fuzzFinding: Data {
        let url = FuzzRegressionTests.directory.appendingPathComponent("FuzzManager-data-alive-at-the-leak-check")
        return try! Data(contentsOf: url).dropFirst()
    }

    static func frames(_ count: Int) -> [ImageFrame] {
        (0..<count).map { ImageFrame(bitmap: TestImages.gradient(width: 24, height: 16, seed: $0), duration: 0.04) }
    }

    static var animatedWebP: Data {
        try! ImageCodersManager.shared.encode(
            DecodedImage(frames: frames(4), loopCount: 0, format: .webp), as: .webp, options: .init(quality: 0.8))
    }

    static var animatedPNG: Data {
        try! ImageCodersManager.shared.encode(
            DecodedImage(frames: frames(4), loopCount: 0, format: .png), as: .png, options: .default)
    }

    static var animatedGIF: Data {
        try! ImageCodersManager.shared.encode(
            DecodedImage(frames: frames(4), loopCount: 0, format: .gif), as: .gif, options: .default)
    }

    /// What one run left alive, seen through weak references.
    final class Survivors: @unchecked Sendable {
        // Invariant: `animations` and `managers` are touched only under `lock`.
        private let lock = NSLock()
        private var animations: [WeakAnimation] = []
        private var managers: [WeakManager] = []
        struct WeakAnimation { weak var value: AnimatedImage? }
        struct WeakManager { weak var value: ImageManager? }

        func watch(_ animation: AnimatedImage?) {
            guard let animation else { return }
            lock.lock(); animations.append(WeakAnimation(value: animation)); lock.unlock()
        }
        func watch(_ manager: ImageManager) {
            lock.lock(); managers.append(WeakManager(value: manager)); lock.unlock()
        }
        var alive: (animations: Int, managers: Int) {
            lock.lock(); defer { lock.unlock() }
            return (animations.count { $0.value != nil }, managers.count { $0.value != nil })
        }
        var watchedAnimations: Int { lock.lock(); defer { lock.unlock() }; return animations.count }
    }

    /// `loads` loads of `data` (each under its own URL, so each decodes), `concurrency` at a
    /// time, through managers of `perManager` loads each; then waits (bounded) for every
    /// manager and every animation to be released.
    func assertReleased(
        _ data: Data, loads: Int, cachesOn: Bool, animated: Bool = true, file: StaticString = #filePath,
        line: UInt = #line
    ) async throws {
        let survivors = Survivors()
        let perManager = 500
        let concurrency = 8
        for batch in stride(from: 0, to: loads, by: perManager) {
            let loader = MockLoader()
            let cache: ImageCache
            if cachesOn {
                // Small enough that entries are evicted while loads run.
                cache = ImageCache(
                    memoryCache: MemoryCache(configuration: .init(costLimit: 256 << 10)),
                    diskCache: UnavailableDiskCache())
            } else {
                cache = ImageCache(
                    memoryCache: MemoryCache(configuration: .init(costLimit: 1)), diskCache: UnavailableDiskCache())
            }
            let manager = ImageManager(cache: cache, loader: loader, coders: .shared)
            survivors.watch(manager)
            var context = ImageLoadContext()
            context.storeCacheType = .memory
            if !cachesOn {
                context.storeCacheType = .none
                context.queryCacheType = .none
            }
            let count = min(perManager, loads - batch)
            for index in 0..<count { loader.answer("/\(batch + index).img", .data(data)) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    if index >= concurrency { try await group.next() }
                    group.addTask { [context] in
                        let url = URL(string: "mock://host/\(batch + index).img")!
                        do {
                            let result = try await manager.loadImage(url, options: .waitStoreCache, context: context)
                            if animated {
                                XCTAssertTrue(result.image?.isAnimated ?? false, "an animation", file: file, line: line)
                            }
                            if index % 50 == 0 { survivors.watch(result.image?.animation) }
                        } catch {
                            XCTAssertFalse(animated, "\(error)", file: file, line: line)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        if animated {
            XCTAssertGreaterThan(
                survivors.watchedAnimations, 0, "lazy animations were delivered", file: file, line: line)
        }
        let deadline = Date().addingTimeInterval(10)
        while survivors.alive != (0, 0), Date() < deadline { try await Task.sleep(nanoseconds: 5_000_000) }
        let alive = survivors.alive
        XCTAssertEqual(alive.managers, 0, "every manager is released once its jobs end", file: file, line: line)
        XCTAssertEqual(alive.animations, 0, "every animation (and its source) is released", file: file, line: line)
    }

    func testTheFuzzFindingTenThousandTimesWithCachesOnAndOff() async throws {
        let data = Self.fuzzFinding
        XCTAssertEqual(data.count, 537, "the 537 bytes LeakSanitizer reported")
        XCTAssertEqual(data.first, UInt8(ascii: "@"))
        // As found ('@' first: no coder's signature, a typed error), and the GIF after it (its
        // first frame ends early: the manager's lenient decode delivers it or fails typed).
        try await assertReleased(data, loads: 5_000, cachesOn: true, animated: false)
        try await assertReleased(data, loads: 5_000, cachesOn: false, animated: false)
        try await assertReleased(Data(data.dropFirst()), loads: 5_000, cachesOn: true, animated: false)
        try await assertReleased(Data(data.dropFirst()), loads: 5_000, cachesOn: false, animated: false)
    }

    func testAnimatedWebPAPNGAndGIFWithCachesOnAndOff() async throws {
        for data in [Self.animatedWebP, Self.animatedPNG, Self.animatedGIF] {
            try await assertReleased(data, loads: 1_000, cachesOn: true)
            try await assertReleased(data, loads: 1_000, cachesOn: false)
        }
    }
}
