import Foundation
import XCTest

@testable import ImageKit

/// Animations through the manager and the caches (issue 12, item 3): lazy by default, costed by
/// what they hold, `.preloadAllFrames` eager, `.decodeFirstFrameOnly` still, the original bytes
/// on disk, the decode limit per canvas, trimmed with the memory cache.
final class LazyAnimationLoadTests: XCTestCase {
    var directory: TemporaryDirectory!
    var loader: MockLoader!
    var cache: ImageCache!

    override func setUp() {
        directory = TemporaryDirectory("lazy-animation")
        loader = MockLoader()
        cache = try! ImageCache(
            directory: directory.url,
            configuration: .init(memory: .init(costLimit: 256 << 20), disk: .init(sweepsAtOpen: false)))
    }

    override func tearDown() {
        directory.remove()
        loader = nil
        cache = nil
    }

    func makeManager() -> ImageManager {
        ImageManager(cache: cache, loader: loader, coders: .shared)
    }

    func url(_ path: String) -> URL { URL(string: "mock://host\(path)")! }

    /// 24 frames of 96×80, each different, looping forever.
    static var gif: Data {
        let frames = (0..<24).map { index in
            ImageFrame(bitmap: TestImages.gradient(width: 96, height: 80, seed: index), duration: 0.05)
        }
        return try! ImageCodersManager.shared.encode(
            DecodedImage(frames: frames, loopCount: 0, format: .gif), as: .gif, options: .default)
    }

    func assertSameFrames(
        _ image: DecodedImage, _ eager: DecodedImage, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        XCTAssertEqual(image.frameCount, eager.frames.count, file: file, line: line)
        for index in 0..<eager.frames.count {
            let frame = try image.frame(at: index)
            XCTAssertEqual(frame.duration, eager.frames[index].duration, file: file, line: line)
            XCTAssertTrue(
                samePixels(frame.bitmap, eager.frames[index].bitmap), "frame \(index)", file: file, line: line)
        }
    }

    func testAManagerLoadIsLazyAndCostsWhatItHolds() async throws {
        let data = Self.gif
        let eager = try ImageCodersManager.shared.decode(data)
        loader.answer("/a.gif", .data(data))
        let result = try await makeManager().loadImage(url("/a.gif"), options: .waitStoreCache)
        let image = try XCTUnwrap(result.image)
        let animation = try XCTUnwrap(image.animation, "an animation is delivered lazy by default")
        XCTAssertEqual(image.frames.count, 1, "a lazy image holds its first frame only")
        XCTAssertEqual(image.frameCount, 24)
        XCTAssertTrue(image.isAnimated)
        XCTAssertEqual(image.loopCount, 0)
        XCTAssertEqual(image.totalDuration, eager.totalDuration, accuracy: 1e-9)
        XCTAssertTrue(samePixels(image.bitmap, eager.frames[0].bitmap), "the poster is frame 0")

        // The memory cache charges the bytes and the decoder's canvases, not 24 canvases.
        let memory = try XCTUnwrap(cache.memoryCache as? MemoryCache)
        let canvas = 96 * 4 * 80
        XCTAssertEqual(memory.totalCost, data.count + max(animation.retainedBytes, canvas), "cost taken at insertion")
        XCTAssertLessThan(memory.totalCost, eager.cost / 4)
        XCTAssertLessThanOrEqual(image.cost, data.count + animation.retainedBytes + canvas)
        try assertSameFrames(image, eager)

        // The next load is a memory hit of the same lazy image.
        let again = try await makeManager().loadImage(url("/a.gif"))
        XCTAssertEqual(again.cacheType, .memory)
        XCTAssertTrue(again.image?.animation === animation)
        // The disk holds the original bytes.
        XCTAssertEqual(cache.diskCache.data(forKey: CacheKey(url("/a.gif")).identity), data)
    }

    func testPreloadAllFramesIsEagerAndDecodeFirstFrameOnlyIsAStill() async throws {
        let data = Self.gif
        let eager = try ImageCodersManager.shared.decode(data)
        loader.answer("/a.gif", .data(data))
        let manager = makeManager()
        let preloaded = try await manager.loadImage(url("/a.gif"), options: .preloadAllFrames)
        XCTAssertNil(preloaded.image?.animation)
        XCTAssertEqual(preloaded.image?.frames.count, 24)
        try assertSameFrames(try XCTUnwrap(preloaded.image), eager)

        let still = try await manager.loadImage(url("/a.gif"), options: [.decodeFirstFrameOnly, .fromLoaderOnly])
        XCTAssertNil(still.image?.animation)
        XCTAssertEqual(still.image?.frameCount, 1)
        XCTAssertFalse(still.image?.isAnimated ?? true)

        // A lazy image in memory is decoded whole for a load that wants every frame; the cache
        // keeps the lazy one.
        await cache.clear(.memory)
        _ = try await manager.loadImage(url("/a.gif"), options: .fromLoaderOnly)
        XCTAssertTrue(cache.imageFromMemory(forKey: CacheKey(url("/a.gif")))?.isLazy ?? false)
        let hit = try await manager.loadImage(url("/a.gif"), options: .preloadAllFrames)
        XCTAssertEqual(hit.cacheType, .memory)
        XCTAssertEqual(hit.image?.frames.count, 24)
        XCTAssertNil(hit.image?.animation)
        XCTAssertTrue(cache.imageFromMemory(forKey: CacheKey(url("/a.gif")))?.isLazy ?? false)
        let firstOnly = try await manager.loadImage(url("/a.gif"), options: .decodeFirstFrameOnly)
        XCTAssertEqual(firstOnly.image?.frameCount, 1, "a cached lazy animation is returned as a still copy")
    }

    func testTheDecodeLimitAppliesToOneCanvasForALazyImage() async throws {
        let data = Self.gif
        loader.answer("/a.gif", .data(data))
        var context = ImageLoadContext()
        // Room for 3 canvases of 96×80, not for 24.
        context.decodingOptions = ImageDecodingOptions(limits: DecodingLimits(maxTotalBytes: 3 * 96 * 80 * 4))
        let manager = makeManager()
        let lazy = try await manager.loadImage(url("/a.gif"), options: .fromLoaderOnly, context: context)
        XCTAssertEqual(lazy.image?.frameCount, 24)
        do {
            _ = try await manager.loadImage(
                url("/a.gif"), options: [.preloadAllFrames, .fromLoaderOnly], context: context)
            XCTFail("24 canvases are over the limit")
        } catch {
            XCTAssertEqual(error.code, .decompressionBomb)
        }
        XCTAssertThrowsError(try lazy.image?.loadingAllFrames()) { error in
            XCTAssertEqual((error as? ImageError)?.code, .decompressionBomb)
        }
    }

    func testLazyImagesGoToDiskAsTheirBytesAndEncodeEveryFrame() async throws {
        let data = Self.gif
        let lazy = try ImageCodersManager.shared.decode(data, options: .init(decodesFramesLazily: true))
        XCTAssertTrue(lazy.isLazy)
        // No bytes given: the cache writes the animation's own, never a re-encode.
        try await cache.store(lazy, data: nil, forKey: "k", cacheType: .disk)
        XCTAssertEqual(cache.diskCache.data(forKey: "k"), data)
        // An encoder given a lazy image encodes all of its frames.
        let webp = try ImageCodersManager.shared.encode(lazy, as: .webp, options: .init(lossless: true))
        let decoded = try ImageCodersManager.shared.decode(webp)
        XCTAssertEqual(decoded.frames.count, 24)
        try assertSameFrames(lazy, decoded)
        let gif = try ImageCodersManager.shared.encode(lazy, as: .gif, options: .default)
        XCTAssertEqual(try ImageCodersManager.shared.decode(gif).frames.count, 24)
    }

    func testScalingOptionsSmallerThanTheCanvasDecodeEagerly() throws {
        let data = Self.gif
        var options = ImageDecodingOptions(decodesFramesLazily: true)
        options.thumbnailPixelSize = PixelSize(width: 200, height: 200)
        XCTAssertTrue(try ImageCodersManager.shared.decode(data, options: options).isLazy, "no scaling needed")
        options.thumbnailPixelSize = PixelSize(width: 48, height: 40)
        let thumbnail = try ImageCodersManager.shared.decode(data, options: options)
        XCTAssertFalse(thumbnail.isLazy)
        XCTAssertEqual(thumbnail.frames.count, 24)
        XCTAssertEqual(thumbnail.width, 48)
        // A still GIF and a still PNG stay ordinary images.
        let still = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.blocks(width: 8, height: 8), format: .gif), as: .gif,
            options: .default)
        XCTAssertFalse(try ImageCodersManager.shared.decode(still, options: .init(decodesFramesLazily: true)).isLazy)
    }

    func testTransformingALazyAnimationTransformsEveryFrame() async throws {
        let data = Self.gif
        loader.answer("/a.gif", .data(data))
        let manager = makeManager()
        // On disk before the next load: a variant looks for its original there
        // (`originalQueryCacheType` defaults to disk, as in SDWebImage).
        _ = try await manager.loadImage(url("/a.gif"), options: .waitStoreCache)
        var context = ImageLoadContext()
        context.transformer = ImageFlippingTransformer(horizontal: true, vertical: false)
        let flipped = try await manager.loadImage(url("/a.gif"), options: .transformAnimatedImage, context: context)
        let image = try XCTUnwrap(flipped.image)
        XCTAssertNil(image.animation)
        XCTAssertEqual(image.frames.count, 24)
        let eager = try ImageCodersManager.shared.decode(data)
        XCTAssertTrue(
            samePixels(
                image.frames[23].bitmap, try eager.frames[23].bitmap.flipped(horizontally: true, vertically: false)))
        XCTAssertEqual(loader.requestCount("/a.gif"), 1, "made from the cached original")
    }

    func testTrimmingTheMemoryCacheTrimsItsAnimationsAndTheirPlayers() async throws {
        let lazy = try ImageCodersManager.shared.decode(Self.gif, options: .init(decodesFramesLazily: true))
        let animation = try XCTUnwrap(lazy.animation)
        let memory = MemoryCache(configuration: .init(costLimit: 64 << 20))
        memory.setImage(lazy, forKey: "a")
        _ = try animation.frame(at: 23)  // takes checkpoints on the way
        let withCheckpoints = animation.retainedBytes
        let clock = VirtualClock()
        let player = AnimatedImagePlayer(animation, loops: 2, maxBufferBytes: 1 << 20, clock: clock)
        var iterator = player.makeAsyncIterator()
        for _ in 0..<10 { _ = try await iterator.next() }
        XCTAssertGreaterThan(player.bufferedBytes, 2 * 96 * 80 * 4)
        memory.trim(toCost: 64 << 20)  // nothing evicted, everything trimmed
        XCTAssertEqual(memory.count, 1)
        XCTAssertLessThan(animation.retainedBytes, withCheckpoints)
        XCTAssertLessThanOrEqual(player.bufferedBytes, 96 * 80 * 4, "at most the frame decoded ahead stays")
        // Playback goes on after a trim.
        let next = try await iterator.next()
        XCTAssertEqual(next?.index, 10)
    }

    func testTheWeakCacheRevivesALazyImageWhileItIsAlive() throws {
        let memory = MemoryCache(configuration: .init(costLimit: 64 << 20, usesWeakCache: true))
        do {
            let lazy = try ImageCodersManager.shared.decode(Self.gif, options: .init(decodesFramesLazily: true))
            memory.setImage(lazy, forKey: "a")
            memory.trim(toCost: 0)
            XCTAssertEqual(memory.count, 0)
            let revived = try XCTUnwrap(memory.image(forKey: "a"), "still held by the caller")
            XCTAssertTrue(revived.animation === lazy.animation)
            XCTAssertEqual(revived.frameCount, 24)
            memory.removeAll()
        }
        XCTAssertNil(memory.image(forKey: "a"), "gone with its last holder")
    }
}
