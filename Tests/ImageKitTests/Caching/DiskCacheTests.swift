import Crypto
import Foundation
import XCTest

@testable import ImageKit

final class DiskCacheTests: XCTestCase {
    var directory: TemporaryDirectory!
    let clock = TestClock()

    override func setUp() { directory = TemporaryDirectory("disk") }
    override func tearDown() { directory.remove() }

    func makeCache(_ configuration: DiskCacheConfiguration = .init(sweepsAtOpen: false)) throws -> DiskCache {
        let cache = try DiskCache(directory: directory.url, configuration: configuration, clock: clock.function)
        cache.waitForBackgroundWork()
        return cache
    }

    static func bytes(_ count: Int, seed: UInt8 = 1) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }
    func bytes(_ count: Int, seed: UInt8 = 1) -> Data { Self.bytes(count, seed: seed) }

    func testFileNamesAreSHA256WithTheURLExtension() {
        let key = "https://example.com/images/a.png?size=large#top"
        let digest = SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(DiskCache.fileName(forKey: key), digest + ".png")
        XCTAssertEqual(
            DiskCache.fileName(forKey: "https://example.com/noext"),
            SHA256.hash(data: Data("https://example.com/noext".utf8)).map { String(format: "%02x", $0) }.joined())
        XCTAssertFalse(
            DiskCache.fileName(forKey: "https://e.com/a." + String(repeating: "x", count: 300)).contains("."),
            "over-long extensions are dropped")
        XCTAssertFalse(
            DiskCache.fileName(forKey: "https://e.com/a.p%20g").contains("."), "only plain extensions are kept")
        XCTAssertTrue(DiskCache.fileName(forKey: "plain-key.jpeg").hasSuffix(".jpeg"))
    }

    func roundTrip(_ storage: DiskCacheConfiguration.MetadataStorage) throws {
        let cache = try makeCache(.init(metadataStorage: storage, sweepsAtOpen: false))
        let key = "https://example.com/a.jpg"
        let http = HTTPCacheHeaders(
            etag: "\"abc\"", lastModified: "Tue, 15 Nov 1994 12:45:26 GMT", cacheControl: "max-age=60",
            contentType: "image/jpeg")
        try cache.store(bytes(5000), forKey: key, expiryDate: nil, http: http)
        XCTAssertEqual(cache.data(forKey: key), bytes(5000))
        let metadata = try XCTUnwrap(cache.metadata(forKey: key))
        XCTAssertEqual(metadata.key, key)
        XCTAssertEqual(metadata.byteCount, 5000)
        XCTAssertEqual(metadata.http, http)
        XCTAssertEqual(metadata.storedDate.timeIntervalSince1970, clock.now.timeIntervalSince1970, accuracy: 0.001)
        XCTAssertEqual(metadata.expiryDate, clock.now.addingTimeInterval(60), "max-age gives the expiry date")
        XCTAssertTrue(metadata.isFresh(at: clock.now))
        XCTAssertFalse(metadata.isFresh(at: clock.now.addingTimeInterval(61)))

        // Metadata survives a restart: a new instance reads it back.
        let reopened = try makeCache(.init(metadataStorage: storage, sweepsAtOpen: false))
        XCTAssertEqual(reopened.metadata(forKey: key)?.http?.etag, "\"abc\"")

        // A 304 refreshes headers without rewriting bytes.
        XCTAssertTrue(
            reopened.refresh(
                forKey: key, expiryDate: nil, http: HTTPCacheHeaders(etag: "\"abc\"", cacheControl: "max-age=600")))
        XCTAssertEqual(reopened.metadata(forKey: key)?.http?.cacheControl, "max-age=600")
        XCTAssertEqual(reopened.data(forKey: key), bytes(5000))
        XCTAssertFalse(reopened.refresh(forKey: "https://example.com/missing.jpg", expiryDate: nil, http: nil))

        // Extended data comes back as stored (tabs, newlines and backslashes too) and survives a refresh.
        let kept = ["quality": "72", "odd\tname": "a\\b\nc", "empty": ""]
        try reopened.store(bytes(10), forKey: key + "?x", expiryDate: nil, http: http, extendedData: kept)
        XCTAssertEqual(reopened.metadata(forKey: key + "?x")?.extendedData, kept)
        XCTAssertTrue(reopened.refresh(forKey: key + "?x", expiryDate: nil, http: http))
        XCTAssertEqual(
            try makeCache(.init(metadataStorage: storage, sweepsAtOpen: false))
                .metadata(forKey: key + "?x")?.extendedData, kept)
        XCTAssertEqual(reopened.metadata(forKey: key)?.extendedData, [:])
    }

    func testRoundTripWithExtendedAttributes() throws {
        try roundTrip(.extendedAttributes)
        let path = try makeCache().path(forKey: "https://example.com/a.jpg")
        XCTAssertNotNil(DiskFiles.readAttribute(path), "metadata is in the user.imagekit.meta xattr")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path + "/v1/meta"), "no sidecars")
    }

    func testRoundTripWithSidecarFiles() throws {
        try roundTrip(.sidecarFiles)
        let name = DiskCache.fileName(forKey: "https://example.com/a.jpg")
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.path + "/v1/meta/" + name))
        XCTAssertNil(DiskFiles.readAttribute(directory.path + "/v1/" + name), "no xattr in sidecar mode")
    }

    func testExtensionFallbackFindsEntriesWrittenWithoutExtension() throws {
        let cache = try makeCache()
        let key = "https://example.com/legacy.png"
        let bare = String(DiskCache.fileName(forKey: key).split(separator: ".")[0])
        try bytes(100).write(to: URL(fileURLWithPath: cache.entriesDirectory + "/" + bare))
        XCTAssertEqual(cache.data(forKey: key), bytes(100))
        XCTAssertTrue(cache.contains(key))
        cache.remove(key)
        XCTAssertFalse(cache.contains(key))
    }

    func testWritesAreAtomicAndLeaveNoTemporaryFiles() throws {
        let cache = try makeCache()
        for index in 0..<20 { try cache.store(bytes(1000 + index), forKey: "k\(index).png") }
        try cache.store(bytes(10), forKey: "k0.png")  // replace
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.entriesDirectory)
        XCTAssertFalse(names.contains { $0.hasPrefix(".tmp-") })
        XCTAssertEqual(cache.data(forKey: "k0.png"), bytes(10))
        XCTAssertEqual(cache.count, 20)
    }

    func testCorruptTruncatedAndDeletedEntriesAreMisses() throws {
        let cache = try makeCache()
        for key in ["a.png", "b.png", "c.png", "d.png"] { try cache.store(bytes(4000), forKey: key) }
        // Truncated behind the cache's back: a miss, and the entry is dropped.
        let truncated = cache.path(forKey: "a.png")
        try bytes(100).write(to: URL(fileURLWithPath: truncated))
        XCTAssertNil(cache.data(forKey: "a.png"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: truncated))
        // Deleted behind its back.
        try FileManager.default.removeItem(atPath: cache.path(forKey: "b.png"))
        XCTAssertNil(cache.data(forKey: "b.png"))
        // Not a regular file any more.
        let replaced = cache.path(forKey: "c.png")
        try FileManager.default.removeItem(atPath: replaced)
        try FileManager.default.createDirectory(atPath: replaced, withIntermediateDirectories: false)
        XCTAssertNil(cache.data(forKey: "c.png"))
        // The others are untouched.
        XCTAssertEqual(cache.data(forKey: "d.png"), bytes(4000))
    }

    func testStoreFailuresAreTypedErrors() throws {
        let cache = try makeCache()
        try cache.store(bytes(10), forKey: "kept.png")
        // The directory replaced by a file: writes fail with ioError, reads miss, nothing traps.
        let entries = cache.entriesDirectory
        try FileManager.default.moveItem(atPath: entries, toPath: entries + ".moved")
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: entries))
        XCTAssertThrowsError(try cache.store(bytes(10), forKey: "x.png")) { error in
            XCTAssertEqual((error as? ImageError)?.code, .ioError)
        }
        XCTAssertNil(cache.data(forKey: "kept.png"))
        try FileManager.default.removeItem(atPath: entries)
        try FileManager.default.moveItem(atPath: entries + ".moved", toPath: entries)
        XCTAssertEqual(cache.data(forKey: "kept.png"), bytes(10), "the existing entry survived")
    }

    func testDirectoryRemovedBehindTheCacheIsRecreated() throws {
        let cache = try makeCache()
        try FileManager.default.removeItem(atPath: directory.path)
        try cache.store(bytes(10), forKey: "again.png")
        XCTAssertEqual(cache.data(forKey: "again.png"), bytes(10))
    }

    func testExpiryByModificationDate() throws {
        let cache = try makeCache()
        try cache.store(bytes(100), forKey: "old.png")
        clock.advance(6 * 24 * 3600)
        try cache.store(bytes(100), forKey: "new.png")
        clock.advance(24 * 3600)  // old is exactly 7 days old: equality counts as expired
        let report = cache.removeExpired()
        XCTAssertEqual(report.removedExpired, 1)
        XCTAssertNil(cache.data(forKey: "old.png"))
        XCTAssertNotNil(cache.data(forKey: "new.png"))
        XCTAssertEqual(cache.count, 1)

        let forever = try makeCache(.init(maxAge: -1, sweepsAtOpen: false))
        clock.advance(365 * 24 * 3600)
        XCTAssertEqual(forever.removeExpired().removedExpired, 0, "a negative age never expires")
    }

    func testExpiryByAccessDateIsTrackedExplicitly() throws {
        for type in [DiskCacheConfiguration.ExpiryDate.accessDate, .modificationDate] {
            let cache = try makeCache(.init(expiryDate: type, sweepsAtOpen: false))
            try cache.store(bytes(100), forKey: "read-later.png")
            clock.advance(3600)
            try cache.store(bytes(100), forKey: "never-read.png")
            clock.advance(6 * 24 * 3600)
            XCTAssertNotNil(cache.data(forKey: "read-later.png"))
            clock.advance(24 * 3600 + 3600)  // stored 7 d 2 h and 7 d 1 h ago; read-later read 1 d 1 h ago
            cache.removeExpired()
            XCTAssertNil(cache.data(forKey: "never-read.png"), "\(type)")
            if type == .accessDate {
                XCTAssertNotNil(cache.data(forKey: "read-later.png"), "a read keeps an entry fresh by access date")
            } else {
                XCTAssertNil(cache.data(forKey: "read-later.png"), "reads do not count by modification date")
            }
            cache.removeAll()
        }
    }

    func testExpiryTypeDecidesWhichEntryIsOldestForTheSizePass() throws {
        for type in [DiskCacheConfiguration.ExpiryDate.accessDate, .modificationDate] {
            let writer = try makeCache(.init(maxAge: -1, expiryDate: type, sweepsAtOpen: false))
            for key in ["a.png", "b.png", "c.png"] {
                try writer.store(bytes(4000), forKey: key)
                clock.advance(3600)
            }
            XCTAssertNotNil(writer.data(forKey: "a.png"))  // a: oldest written, newest read
            // Just over the limit: the pass must remove two of the three equal entries.
            let sweeper = try makeCache(
                .init(maxAge: -1, maxSize: writer.totalSize - 1, expiryDate: type, sweepsAtOpen: false))
            sweeper.removeExpired()
            let survivors = ["a.png", "b.png", "c.png"].filter { writer.contains($0) }
            XCTAssertEqual(survivors, type == .accessDate ? ["a.png"] : ["c.png"], "\(type)")
            writer.removeAll()
        }
    }

    func testSizeSweepRemovesOldestUntilBelowHalf() throws {
        var cache = try makeCache()
        for index in 0..<10 {
            try cache.store(bytes(8192, seed: UInt8(index)), forKey: "e\(index).png")
            clock.advance(60)
        }
        let total = cache.totalSize
        XCTAssertGreaterThanOrEqual(total, 10 * 8192, "allocated size counts at least the bytes")
        let limit = total * 8 / 10
        cache = try makeCache(.init(maxSize: limit, sweepsAtOpen: false))
        let report = cache.removeExpired()
        XCTAssertLessThan(cache.totalSize, limit / 2)
        XCTAssertGreaterThan(report.removedForSize, 0)
        for index in 0..<report.removedForSize { XCTAssertNil(cache.data(forKey: "e\(index).png"), "oldest go first") }
        XCTAssertNotNil(cache.data(forKey: "e9.png"), "the newest stays")
    }

    func testStoreOverTheLimitTriggersABackgroundSweep() throws {
        let cache = try makeCache(.init(maxSize: 40_000, sweepsAtOpen: false))
        for index in 0..<12 {
            try cache.store(bytes(8192, seed: UInt8(index)), forKey: "s\(index).png")
            clock.advance(1)
        }
        cache.waitForBackgroundWork()
        XCTAssertLessThanOrEqual(cache.totalSize, 40_000)
        XCTAssertNotNil(cache.data(forKey: "s11.png"))
    }

    func testHiddenFilesAndSubdirectoriesAreLeftAlone() throws {
        let cache = try makeCache(.init(maxAge: 10, sweepsAtOpen: false))
        try cache.store(bytes(10), forKey: "entry.png")
        let hidden = cache.entriesDirectory + "/.keep"
        let subdirectory = cache.entriesDirectory + "/nested"
        try bytes(10).write(to: URL(fileURLWithPath: hidden))
        try FileManager.default.createDirectory(atPath: subdirectory, withIntermediateDirectories: false)
        clock.advance(3600)
        cache.removeExpired()
        XCTAssertTrue(FileManager.default.fileExists(atPath: hidden))
        XCTAssertTrue(FileManager.default.fileExists(atPath: subdirectory))
        XCTAssertNil(cache.data(forKey: "entry.png"))
        XCTAssertEqual(cache.count, 0)
    }

    func testIndexIsKeptWithoutWalkingTheDirectory() throws {
        // No age expiry: the file added by hand below carries the real clock's date.
        let cache = try makeCache(.init(maxAge: -1, sweepsAtOpen: false))
        try cache.store(bytes(5000), forKey: "a.png")
        try cache.store(bytes(5000), forKey: "b.png")
        let size = cache.totalSize
        XCTAssertEqual(cache.count, 2)
        // A file added behind the cache's back is not seen by stores (no walk) …
        try bytes(5000).write(
            to: URL(fileURLWithPath: cache.entriesDirectory + "/" + DiskCache.fileName(forKey: "c.png")))
        try cache.store(bytes(5000), forKey: "d.png")
        XCTAssertEqual(cache.count, 3)
        // … only by the next scan.
        cache.removeExpired()
        XCTAssertEqual(cache.count, 4)
        cache.remove("a.png")
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.totalSize, size / 2 * 3)
        // A new instance builds its index from one scan at open.
        let reopened = try makeCache(.init(maxAge: -1, sweepsAtOpen: false))
        XCTAssertEqual(reopened.count, 3)
        reopened.removeAll()
        XCTAssertEqual(reopened.count, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: reopened.entriesDirectory), "clear keeps the directory")
    }

    func testTwoInstancesShareOneDirectory() throws {
        let first = try makeCache()
        let second = try makeCache()
        try first.store(bytes(300), forKey: "shared.png")
        XCTAssertEqual(second.data(forKey: "shared.png"), bytes(300))
        // One sweeps while the other stores and reads: no errors, no lost or half entries.
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            for index in 0..<200 {
                try? first.store(Self.bytes(2000, seed: UInt8(index % 250)), forKey: "p\(index).png")
            }
        }
        DispatchQueue.global().async(group: group) {
            for _ in 0..<20 { second.removeExpired() }
        }
        DispatchQueue.global().async(group: group) {
            for index in 0..<200 {
                if let data = second.data(forKey: "p\(index).png") {
                    XCTAssertEqual(data, Self.bytes(2000, seed: UInt8(index % 250)))
                }
            }
        }
        group.wait()
        for index in 0..<200 {
            XCTAssertEqual(second.data(forKey: "p\(index).png"), bytes(2000, seed: UInt8(index % 250)))
        }
        // While one holds the sweep lock, the other's sweep stands aside.
        let lock = DiskFiles.Lock(first.entriesDirectory + "/.sweep.lock", blocking: true)
        XCTAssertTrue(second.removeExpired().skipped)
        withExtendedLifetime(lock) {}
    }

    func testConcurrentStoreQueryAndSweep() async throws {
        let cache = try makeCache(.init(maxSize: 200_000, sweepsAtOpen: false))
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for step in 0..<100 {
                        let key = "c\((worker * 7 + step) % 60).png"
                        switch step % 5 {
                        case 0, 1: try? cache.store(Self.bytes(3000 + step), forKey: key)
                        case 2: if let data = cache.data(forKey: key) { XCTAssertGreaterThanOrEqual(data.count, 3000) }
                        case 3: cache.remove(key)
                        default: if worker == 0 { cache.removeExpired() } else { _ = cache.totalSize }
                        }
                    }
                }
            }
        }
        cache.waitForBackgroundWork()
        cache.removeExpired()
        XCTAssertLessThanOrEqual(cache.totalSize, 200_000)
    }

    /// Bounded by default: the size limit is chosen at open from the free space (at least 64 MiB,
    /// at most 1 GiB), and a sweep runs every ten minutes while the cache is open.
    func testTheDefaultsBoundTheCache() throws {
        XCTAssertEqual(DiskCacheConfiguration().maxSize, DiskCacheConfiguration.automaticMaxSize)
        XCTAssertEqual(DiskCacheConfiguration().sweepInterval, 600)
        XCTAssertEqual(DiskCacheConfiguration.automaticMaxSize(freeBytes: 0), 64 << 20)
        XCTAssertEqual(DiskCacheConfiguration.automaticMaxSize(freeBytes: 5 << 30), 512 << 20)
        XCTAssertEqual(DiskCacheConfiguration.automaticMaxSize(freeBytes: 500 << 30), 1 << 30)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "disk-defaults-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try DiskCache(directory: directory)
        XCTAssertGreaterThanOrEqual(cache.configuration.maxSize, 64 << 20)
        XCTAssertLessThanOrEqual(cache.configuration.maxSize, 1 << 30)
        // An explicit 0 still means unlimited.
        XCTAssertEqual(try DiskCache(directory: directory, configuration: .init(maxSize: 0)).configuration.maxSize, 0)
    }
}
