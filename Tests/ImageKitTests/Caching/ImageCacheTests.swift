import Foundation
import XCTest

@testable import ImageKit

final class ImageCacheTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUp() { directory = TemporaryDirectory("image-cache") }
    override func tearDown() { directory.remove() }

    func makeCache(cachesInMemory: Bool = true) throws -> ImageCache {
        try ImageCache(
            directory: directory.url,
            configuration: ImageCacheConfiguration(
                cachesImagesInMemory: cachesInMemory,
                memory: .init(costLimit: 64 << 20),
                disk: .init(sweepsAtOpen: false)))
    }

    func jpegImage() throws -> (DecodedImage, Data) {
        let data = try Corpus.data("jpeg/pillow/hopper.jpg")
        return (try ImageCodersManager.shared.decode(data), data)
    }

    func testStoreThenQueryMemoryThenDisk() async throws {
        let cache = try makeCache()
        let (image, data) = try jpegImage()
        let key: CacheKey = "https://example.com/hopper.jpg"
        try await cache.store(image, data: data, forKey: key)
        XCTAssertEqual(cache.diskCache.data(forKey: key.identity), data, "the disk holds exactly the given bytes")

        var result = try await cache.query(key)
        XCTAssertEqual(result.cacheType, .memory)
        XCTAssertNil(result.data, "a memory hit does not read the disk by default")
        XCTAssertTrue(result.image?.bitmap === image.bitmap)

        cache.memoryCache.removeAll()
        result = try await cache.query(key)
        XCTAssertEqual(result.cacheType, .disk)
        XCTAssertEqual(result.data, data)
        XCTAssertEqual(result.image?.width, 128)
        let answer1 = try await cache.query(key).cacheType
        XCTAssertEqual(answer1, .memory, "a disk hit is promoted to memory")

        result = try await cache.query(key, options: .queryMemoryData)
        XCTAssertEqual(result.cacheType, .memory)
        XCTAssertEqual(result.data, data, "queryMemoryData reads the bytes without decoding")

        let answer2 = try await cache.query(key, cacheType: .none).cacheType
        XCTAssertEqual(answer2, .none)
        let answer3 = try await cache.query("https://example.com/missing.jpg").cacheType
        XCTAssertEqual(answer3, .none)
        let answer4 = try await cache.query("https://example.com/missing.jpg", cacheType: .memory).cacheType
        XCTAssertEqual(answer4, .none)
    }

    func testSkipMemoryPromotionAndMemoryOff() async throws {
        let (image, data) = try jpegImage()
        let cache = try makeCache()
        try await cache.store(image, data: data, forKey: "a.jpg", cacheType: .disk)
        XCTAssertNil(cache.imageFromMemory(forKey: "a.jpg"), "disk-only store")
        _ = try await cache.query("a.jpg", options: .skipMemoryPromotion)
        XCTAssertNil(cache.imageFromMemory(forKey: "a.jpg"))

        let noMemory = try makeCache(cachesInMemory: false)
        try await noMemory.store(image, data: data, forKey: "b.jpg")
        XCTAssertNil(noMemory.imageFromMemory(forKey: "b.jpg"))
        let answer5 = try await noMemory.query("b.jpg").cacheType
        XCTAssertEqual(answer5, .disk)
        XCTAssertNil(noMemory.imageFromMemory(forKey: "b.jpg"), "disk hits are not promoted either")

        try await cache.store(image, data: data, forKey: "c.jpg", cacheType: .memory)
        XCTAssertFalse(cache.diskCache.contains(CacheKey("c.jpg").identity), "memory-only store")
    }

    func testReencodeRulesWhenNoDataIsGiven() async throws {
        let cache = try makeCache()
        func storedFormat(_ image: DecodedImage, _ key: String) async throws -> ImageFormat {
            try await cache.store(image, data: nil, forKey: CacheKey(key))
            return ImageFormat.detect(try XCTUnwrap(cache.diskCache.data(forKey: CacheKey(key).identity)))
        }
        let opaque = DecodedImage(
            frames: [ImageFrame(bitmap: TestImages.gradient(width: 16, height: 16))], format: .unknown)
        let translucent = DecodedImage(
            frames: [ImageFrame(bitmap: TestImages.gradient(width: 16, height: 16, alpha: true))], format: .unknown)
        let animated = DecodedImage(
            frames: [
                ImageFrame(bitmap: TestImages.blocks(width: 8, height: 8), duration: 0.1),
                ImageFrame(bitmap: TestImages.blocks(width: 8, height: 8, colors: 3), duration: 0.1),
            ],
            loopCount: 0, format: .unknown)
        let storedOpaque = try await storedFormat(opaque, "o")
        let storedTranslucent = try await storedFormat(translucent, "t")
        let storedAnimated = try await storedFormat(animated, "a")
        XCTAssertEqual(storedOpaque, .jpeg)
        XCTAssertEqual(storedTranslucent, .png)
        XCTAssertEqual(storedAnimated, .gif)
        var webp = opaque
        webp.format = .webp
        let storedWebP = try await storedFormat(webp, "w")
        XCTAssertEqual(storedWebP, .webp, "a known format is kept")
        let reloaded = try await cache.query("a", cacheType: .disk)
        XCTAssertEqual(reloaded.image?.frames.count, 2)
    }

    func testPreviewsAndPartialImagesAreNeverCached() async throws {
        let cache = try makeCache()
        var preview = try jpegImage().0
        preview.isPreview = true
        try await cache.store(preview, data: nil, forKey: "preview.jpg")
        var partial = try jpegImage().0
        partial.isPartial = true
        try await cache.store(partial, data: Data([1, 2, 3]), forKey: "partial.jpg")
        try await cache.store(nil, data: Data([1, 2, 3]), forKey: "nil-image.jpg")
        for key in ["preview.jpg", "partial.jpg", "nil-image.jpg"] {
            let found = await cache.containsImage(CacheKey(key))
            XCTAssertEqual(found, .none, key)
        }
    }

    func testFirstFrameOnlyOnAnAnimatedMemoryHit() async throws {
        let cache = try makeCache()
        let data = try Corpus.data("gif/gif-test-suite/animated_loop.gif")
        let animated = try ImageCodersManager.shared.decode(data)
        try await cache.store(animated, data: data, forKey: "anim.gif")
        let still = try await cache.query("anim.gif", options: .decodeFirstFrameOnly)
        XCTAssertEqual(still.image?.frames.count, 1)
        XCTAssertEqual(still.cacheType, .memory)
        XCTAssertEqual(cache.imageFromMemory(forKey: "anim.gif")?.frames.count, 4, "the cached entry stays animated")
        cache.memoryCache.removeAll()
        let fromDisk = try await cache.query("anim.gif", options: .decodeFirstFrameOnly)
        XCTAssertEqual(fromDisk.image?.frames.count, 1)
        XCTAssertNil(
            cache.imageFromMemory(forKey: "anim.gif"), "a first-frame decode is not promoted as the whole image")
    }

    func testOriginalAndTransformedEntriesDoNotCollide() async throws {
        let cache = try makeCache()
        let (image, data) = try jpegImage()
        let small = DecodedImage(frames: [ImageFrame(bitmap: TestImages.gradient(width: 4, height: 4))], format: .png)
        let original = CacheKey("http://x/a-T.png")
        let transformed = CacheKey("http://x/a.png").transformed(by: "T")
        try await cache.store(image, data: data, forKey: original)
        try await cache.store(small, data: nil, forKey: transformed)
        cache.memoryCache.removeAll()
        let a = try await cache.query(original)
        let b = try await cache.query(transformed)
        XCTAssertEqual(a.image?.width, 128)
        XCTAssertEqual(b.image?.width, 4)
        let thumbnail = CacheKey("http://x/a.png").thumbnail(width: 4, height: 4, preservesAspectRatio: true)
        let answer6 = try await cache.query(thumbnail).cacheType
        XCTAssertEqual(answer6, .none)
    }

    func testCorruptDiskEntryIsAMissForTheImageOnly() async throws {
        let cache = try makeCache()
        let (image, data) = try jpegImage()
        try await cache.store(image, data: data, forKey: "good.jpg")
        try await cache.store(image, data: Data(repeating: 0xAB, count: 500), forKey: "garbage.jpg")
        cache.memoryCache.removeAll()
        let garbage = try await cache.query("garbage.jpg")
        XCTAssertNil(garbage.image)
        XCTAssertEqual(garbage.data?.count, 500)
        let answer7 = try await cache.query("good.jpg").image?.width
        XCTAssertEqual(answer7, 128)
    }

    func testRemoveClearAndContains() async throws {
        let cache = try makeCache()
        let (image, data) = try jpegImage()
        try await cache.store(image, data: data, forKey: "k.jpg")
        var found = await cache.containsImage("k.jpg")
        XCTAssertEqual(found, .memory)
        await cache.clear(.memory)
        found = await cache.containsImage("k.jpg")
        XCTAssertEqual(found, .disk)
        await cache.remove("k.jpg")
        found = await cache.containsImage("k.jpg")
        XCTAssertEqual(found, .none)
        try await cache.store(image, data: data, forKey: "k2.jpg")
        await cache.clear()
        found = await cache.containsImage("k2.jpg")
        XCTAssertEqual(found, .none)
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.path + "/v1"))
    }

    func testCompletionHandlersAnswerOnceAndCanBeCancelled() throws {
        let cache = try makeCache()
        let (image, data) = try jpegImage()
        let stored = expectation(description: "stored")
        cache.store(image, data: data, forKey: "c.jpg") { result in
            if case .failure(let error) = result { XCTFail("\(error)") }
            stored.fulfill()
        }
        wait(for: [stored], timeout: 10)

        // A memory answer arrives before query returns.
        let answered = LockedFlag()
        cache.query("c.jpg") { result in
            XCTAssertEqual(try? result.get().cacheType, .memory)
            answered.set()
        }
        XCTAssertTrue(answered.value)

        // A disk query cancelled at once completes exactly once, with `cancelled` (or, if the
        // IO queue won the race, with the result).
        cache.memoryCache.removeAll()
        let calls = LockedCounter()
        let done = expectation(description: "cancelled")
        let token = cache.query("c.jpg") { result in
            calls.increment()
            if case .failure(let error) = result { XCTAssertEqual(error.code, .cancelled) }
            done.fulfill()
        }
        token.cancel()
        token.cancel()
        wait(for: [done], timeout: 10)
        Thread.sleep(forTimeInterval: 0.05)
        XCTAssertEqual(calls.value, 1)

        // queryDiskDataSync answers on the calling thread. (If the IO queue won the race above,
        // that query promoted the image to memory: clear it.)
        cache.memoryCache.removeAll()
        let syncAnswered = LockedFlag()
        cache.query("c.jpg", options: [.queryDiskDataSync, .skipMemoryPromotion]) { result in
            XCTAssertEqual(try? result.get().cacheType, .disk)
            syncAnswered.set()
        }
        XCTAssertTrue(syncAnswered.value)
    }

    func testAsyncQueryHonoursTaskCancellation() async throws {
        let cache = try makeCache()
        let (image, data) = try jpegImage()
        try await cache.store(image, data: data, forKey: "t.jpg", cacheType: .disk)
        let task = Task { try await cache.query("t.jpg") }
        task.cancel()
        do {
            let result = try await task.value
            XCTAssertEqual(result.cacheType, .disk, "finished before the cancel landed")
        } catch let error as ImageError {
            XCTAssertEqual(error.code, .cancelled)
        }
    }

    func testConcurrentStoresAndQueries() async throws {
        let cache = try makeCache()
        let (image, data) = try jpegImage()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for step in 0..<40 {
                        let key = CacheKey("k\((worker + step) % 16).jpg")
                        if step % 4 == 0 {
                            try? await cache.store(image, data: data, forKey: key)
                        } else if step % 7 == 0 {
                            await cache.remove(key)
                        } else if let result = try? await cache.query(key), let hit = result.image {
                            XCTAssertEqual(hit.width, 128)
                        }
                    }
                }
            }
        }
    }
}
