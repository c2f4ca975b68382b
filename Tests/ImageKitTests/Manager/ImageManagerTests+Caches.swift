import Foundation
import XCTest

@testable import ImageKit

extension ImageManagerTests {
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
}
