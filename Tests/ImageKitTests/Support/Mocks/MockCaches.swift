import Foundation
import XCTest

@testable import ImageKit

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

/// A cache that records the calls it receives and answers from a fixed set of keys.
final class RecordingCache: ImageCaching, @unchecked Sendable {
    let name: String
    let hits: Set<String>
    private let lock = NSLock()
    private var log: [String] = []  // guarded by lock

    init(_ name: String, hits: Set<String> = []) {
        self.name = name
        self.hits = hits
    }

    var calls: [String] { lock.lock(); defer { lock.unlock() }; return log }
    private func record(_ call: String) { lock.lock(); log.append(call); lock.unlock() }

    func query(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) async throws(ImageError) -> ImageCacheQueryResult {
        record("query")
        guard hits.contains(key.source) else { return .miss }
        var image = TestImages.still(TestImages.gradient(width: 1, height: 1))
        image.format = name == "high" ? .webp : .png  // tells the caller which cache answered
        return ImageCacheQueryResult(image: image, cacheType: .memory)
    }

    func store(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType,
        http: HTTPCacheHeaders?
    ) async throws(ImageError) { record("store") }
    /// Keeps no bytes, on purpose: these tests count queries and image stores.
    func storeData(_ data: Data, forKey key: CacheKey, http: HTTPCacheHeaders?) async throws(ImageError) {}
    func remove(_ key: CacheKey, cacheType: ImageCacheType) async { record("remove") }
    func clear(_ cacheType: ImageCacheType) async { record("clear") }
    func containsImage(_ key: CacheKey, cacheType: ImageCacheType) async -> ImageCacheType {
        record("contains")
        return hits.contains(key.source) ? .disk : .none
    }
}
