import Foundation
import XCTest

@testable import ImageKit

extension ImageManagerTests {
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
}
