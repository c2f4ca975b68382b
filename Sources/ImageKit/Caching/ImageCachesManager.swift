import Foundation

/// Several caches behind the ``ImageCaching`` protocol (SDWebImage's `SDImageCachesManager`),
/// with an operation policy per kind of operation. Priority follows registration: the cache
/// added last is the highest.
///
/// ```swift
/// let caches = ImageCachesManager(caches: [sharedCache, localCache])
/// caches.queryPolicy = .serial      // highest first, stop at the first hit
/// caches.storePolicy = .highestOnly
/// ```
public final class ImageCachesManager: ImageCaching {
    /// How an operation is spread over the caches.
    public enum Policy: Sendable, Hashable {
        /// One cache after another, highest priority first; a query stops at the first hit.
        case serial
        /// All caches at once; a query answers with the highest-priority hit.
        case concurrent
        /// Only the highest-priority (last added) cache.
        case highestOnly
        /// Only the lowest-priority (first added) cache.
        case lowestOnly
    }

    private struct State {
        var caches: [any ImageCaching]
        var queryPolicy = Policy.serial
        var storePolicy = Policy.highestOnly
        var removePolicy = Policy.concurrent
        var clearPolicy = Policy.concurrent
        var containsPolicy = Policy.serial
    }

    private let state: Locked<State>

    /// A manager over `caches`, asked in order.
    public init(caches: [any ImageCaching] = []) {
        state = Locked(State(caches: caches))
    }

    /// Adds a cache after the existing ones.
    public func add(_ cache: any ImageCaching) { state.withLock { $0.caches.append(cache) } }
    /// The caches, in the order they are asked.
    public var caches: [any ImageCaching] { state.withLock { $0.caches } }

    /// Default `.serial` (SDWebImage's default).
    public var queryPolicy: Policy {
        get { state.withLock { $0.queryPolicy } }
        set { state.withLock { $0.queryPolicy = newValue } }
    }
    /// Default `.highestOnly`.
    public var storePolicy: Policy {
        get { state.withLock { $0.storePolicy } }
        set { state.withLock { $0.storePolicy = newValue } }
    }
    /// Default `.concurrent`.
    public var removePolicy: Policy {
        get { state.withLock { $0.removePolicy } }
        set { state.withLock { $0.removePolicy = newValue } }
    }
    /// Default `.concurrent`.
    public var clearPolicy: Policy {
        get { state.withLock { $0.clearPolicy } }
        set { state.withLock { $0.clearPolicy = newValue } }
    }
    /// Default `.serial`.
    public var containsPolicy: Policy {
        get { state.withLock { $0.containsPolicy } }
        set { state.withLock { $0.containsPolicy = newValue } }
    }

    /// The caches an operation under `policy` visits, highest priority first.
    private func targets(_ policy: Policy) -> [any ImageCaching] {
        let caches = self.caches
        switch policy {
        case .serial, .concurrent: return caches.reversed()
        case .highestOnly: return caches.last.map { [$0] } ?? []
        case .lowestOnly: return caches.first.map { [$0] } ?? []
        }
    }

    /// Asks the caches in order; the first hit answers.
    public func query(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) async throws(ImageError) -> ImageCacheQueryResult {
        let policy = queryPolicy
        let caches = targets(policy)
        if policy != .concurrent {
            for cache in caches {
                let result = try await cache.query(key, cacheType: cacheType, options: options, decoding: decoding)
                if Self.isHit(result, options) { return result }
            }
            return .miss
        }
        let results = await withTaskGroup(of: (Int, Result<ImageCacheQueryResult, ImageError>).self) { group in
            // Explicit indices and capture list: with a tuple from `enumerated()` captured by a
            // closure holding `do throws(…)`, Swift 6.3's optimiser handed every task rank 0.
            for rank in caches.indices {
                let cache = caches[rank]
                group.addTask { [rank, cache] in
                    let result: Result<ImageCacheQueryResult, ImageError> = await Self.catching {
                        () async throws(ImageError) -> ImageCacheQueryResult in
                        try await cache.query(key, cacheType: cacheType, options: options, decoding: decoding)
                    }
                    return (rank, result)
                }
            }
            var collected: [(Int, Result<ImageCacheQueryResult, ImageError>)] = []
            for await result in group { collected.append(result) }
            return collected.sorted { $0.0 < $1.0 }
        }
        for (_, result) in results { if case .success(let hit) = result, Self.isHit(hit, options) { return hit } }
        if Task.isCancelled { throw ImageError(.cancelled, "the cache query was cancelled") }
        return .miss
    }

    /// An image, or the bytes when the query asked for bytes only.
    private static func isHit(_ result: ImageCacheQueryResult, _ options: ImageCacheQueryOptions) -> Bool {
        result.image != nil || (options.contains(.avoidDecodeImage) && result.data != nil)
    }

    /// Member caches answer in rank order: the first hit wins; nil as soon as one member needs
    /// to wait (the whole query then runs asynchronously).
    public func querySynchronously(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) -> Result<ImageCacheQueryResult, ImageError>? {
        for cache in targets(queryPolicy) {
            guard let answer = cache.querySynchronously(key, cacheType: cacheType, options: options, decoding: decoding)
            else {
                return nil
            }
            if case .success(let hit) = answer, !Self.isHit(hit, options) { continue }
            return answer
        }
        return .success(.miss)
    }

    /// The first member (in query order) that has `key` in memory.
    public func imageFromMemory(forKey key: CacheKey) -> DecodedImage? {
        for cache in targets(queryPolicy) {
            if let image = cache.imageFromMemory(forKey: key) { return image }
        }
        return nil
    }

    public func refreshMetadata(forKey key: CacheKey, http: HTTPCacheHeaders) async -> Bool {
        let refreshed = Locked(false)
        await each(storePolicy) { cache in
            if await cache.refreshMetadata(forKey: key, http: http) { refreshed.withLock { $0 = true } }
        }
        return refreshed.withLock { $0 }
    }

    /// `Result(catching)` for async bodies with typed throws.
    private static func catching<Success>(_ body: () async throws(ImageError) -> Success) async -> Result<
        Success, ImageError
    > {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// Stores in every cache.
    public func store(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType,
        http: HTTPCacheHeaders?
    ) async throws(ImageError) {
        let policy = storePolicy
        let caches = targets(policy)
        if policy != .concurrent {
            for cache in caches {
                try await cache.store(image, data: data, forKey: key, cacheType: cacheType, http: http)
            }
            return
        }
        let failures = await withTaskGroup(of: ImageError?.self) { group in
            for cache in caches {
                group.addTask {
                    do throws(ImageError) {
                        try await cache.store(image, data: data, forKey: key, cacheType: cacheType, http: http)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            var failures: [ImageError] = []
            for await failure in group { if let failure { failures.append(failure) } }
            return failures
        }
        if let first = failures.first { throw first }
    }

    public func storeData(_ data: Data, forKey key: CacheKey, http: HTTPCacheHeaders?) async throws(ImageError) {
        // Members one after the other whatever the policy: a bytes-only write is rare.
        for cache in targets(storePolicy) { try await cache.storeData(data, forKey: key, http: http) }
    }

    public func remove(_ key: CacheKey, cacheType: ImageCacheType) async {
        await each(removePolicy) { await $0.remove(key, cacheType: cacheType) }
    }

    public func clear(_ cacheType: ImageCacheType) async {
        await each(clearPolicy) { await $0.clear(cacheType) }
    }

    public func containsImage(_ key: CacheKey, cacheType: ImageCacheType) async -> ImageCacheType {
        let policy = containsPolicy
        let caches = targets(policy)
        if policy != .concurrent {
            for cache in caches {
                let found = await cache.containsImage(key, cacheType: cacheType)
                if found != .none { return found }
            }
            return .none
        }
        let found = await withTaskGroup(of: (Int, ImageCacheType).self) { group in
            for rank in caches.indices {
                let cache = caches[rank]
                group.addTask { [rank, cache] in (rank, await cache.containsImage(key, cacheType: cacheType)) }
            }
            var all: [(Int, ImageCacheType)] = []
            for await item in group { all.append(item) }
            return all.sorted { $0.0 < $1.0 }
        }
        return found.first { $0.1 != .none }?.1 ?? .none
    }

    private func each(_ policy: Policy, _ body: @escaping @Sendable (any ImageCaching) async -> Void) async {
        let caches = targets(policy)
        if policy != .concurrent {
            for cache in caches { await body(cache) }
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for cache in caches { group.addTask { await body(cache) } }
        }
    }
}
