import Foundation
import XCTest

@testable import ImageKit

extension ImageManagerTests {
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
}
