import Foundation

/// Which cache layers an operation touches (SDWebImage's `SDImageCacheType`); as a result, where
/// an image came from.
public enum ImageCacheType: Sendable, Hashable {
    /// In no cache (as a result: the image was not cached).
    case none
    /// The memory layer.
    case memory
    /// The disk layer.
    case disk
    /// Memory and disk.
    case all

    var includesMemory: Bool { self == .memory || self == .all }
    var includesDisk: Bool { self == .disk || self == .all }
}

/// Query flags (SDWebImage's `queryMemoryData`, `queryMemoryDataSync`, `queryDiskDataSync`,
/// `decodeFirstFrameOnly`, plus one to keep disk hits out of memory).
public struct ImageCacheQueryOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// On a memory hit, also read the encoded bytes from disk (without decoding them).
    public static let queryMemoryData = ImageCacheQueryOptions(rawValue: 1 << 0)
    /// With ``queryMemoryData``: read those bytes on the calling thread.
    public static let queryMemoryDataSync = ImageCacheQueryOptions(rawValue: 1 << 1)
    /// On a memory miss, read and decode the disk entry on the calling thread.
    public static let queryDiskDataSync = ImageCacheQueryOptions(rawValue: 1 << 2)
    /// Return a still image: the first frame of an animated hit (the cached entry is unchanged).
    public static let decodeFirstFrameOnly = ImageCacheQueryOptions(rawValue: 1 << 3)
    /// Do not put an image decoded from disk into the memory cache.
    public static let skipMemoryPromotion = ImageCacheQueryOptions(rawValue: 1 << 4)
    /// On a memory miss, return the disk bytes without decoding them (``ImageCacheQueryResult/image``
    /// stays nil); the caller decodes them its own way (a thumbnail of the original, say).
    public static let avoidDecodeImage = ImageCacheQueryOptions(rawValue: 1 << 5)
}

/// The answer to a cache query.
public struct ImageCacheQueryResult: Sendable {
    /// The decoded image, from memory or decoded from disk; nil for a miss or a data-only answer.
    public var image: DecodedImage?
    /// The encoded bytes, when they were read from disk.
    public var data: Data?
    /// Where the image (or, without an image, the data) came from; `.none` for a miss.
    public var cacheType: ImageCacheType
    /// The disk entry's metadata (HTTP validators, expiry), when the disk was read.
    public var metadata: DiskCacheMetadata?

    /// A query's answer; the default is a miss.
    public init(
        image: DecodedImage? = nil, data: Data? = nil, cacheType: ImageCacheType = .none,
        metadata: DiskCacheMetadata? = nil
    ) {
        self.image = image
        self.data = data
        self.cacheType = cacheType
        self.metadata = metadata
    }

    /// The answer for a key that is in no layer.
    public static let miss = ImageCacheQueryResult()
}

/// An image cache: memory, disk, or several composed (SDWebImage's `SDImageCache` protocol).
public protocol ImageCaching: Sendable {
    // Spec: CQS-04.
    /// Looks `key` up in the layers `cacheType` names.
    func query(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) async throws(ImageError) -> ImageCacheQueryResult
    // Spec: CQS-03.
    /// Stores `image` in memory and its bytes on disk, per `cacheType`. Without `data`, the disk
    /// gets the image re-encoded. Previews and partial images are never stored.
    func store(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType,
        http: HTTPCacheHeaders?) async throws(ImageError)
    // Spec: CQS-02.
    /// Writes encoded bytes to the disk layer with no decoded image (the original bytes of a
    /// download delivered as a thumbnail or a transformed variant). ``store(_:data:forKey:cacheType:http:)``
    /// stores nothing without an image; this is its bytes-only counterpart. There is no
    /// default: the manager hands the original bytes of every transformed load to this method, so
    /// a cache that drops them must say so with an empty implementation (a cache without a disk
    /// layer), rather than lose them silently.
    func storeData(_ data: Data, forKey key: CacheKey, http: HTTPCacheHeaders?) async throws(ImageError)
    /// Removes `key` from the layers `cacheType` names.
    func remove(_ key: CacheKey, cacheType: ImageCacheType) async
    /// Removes every entry from the layers `cacheType` names.
    func clear(_ cacheType: ImageCacheType) async
    /// Where `key` is cached: `.memory`, `.disk` or `.none`.
    func containsImage(_ key: CacheKey, cacheType: ImageCacheType) async -> ImageCacheType
    // Spec: MGR-24.
    /// The answer to ``query(_:cacheType:options:decoding:)`` when it is available without
    /// waiting — a memory answer, or a disk answer the options ask for synchronously — and nil
    /// when the query needs the IO queue. The manager's memory-hit path uses it to
    /// answer before `loadImage` returns. The default answers nil: always query asynchronously.
    func querySynchronously(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) -> Result<ImageCacheQueryResult, ImageError>?
    // Spec: CQS-09.
    /// The image in the memory layer under `key`, synchronously, touching nothing else
    /// the manager's memory-hit path. Default: nil (no memory layer).
    func imageFromMemory(forKey key: CacheKey) -> DecodedImage?
    /// Replaces the HTTP headers (and so the expiry) kept with `key`'s disk entry after a
    /// revalidation answered 304. Returns false when there is no such entry. Default: false.
    func refreshMetadata(forKey key: CacheKey, http: HTTPCacheHeaders) async -> Bool
}

extension ImageCaching {
    /// Nil: a cache without a synchronous answer is always queried asynchronously.
    public func querySynchronously(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) -> Result<ImageCacheQueryResult, ImageError>? {
        nil
    }

    public func refreshMetadata(forKey key: CacheKey, http: HTTPCacheHeaders) async -> Bool { false }

    public func imageFromMemory(forKey key: CacheKey) -> DecodedImage? { nil }
}

extension ImageCaching {
    /// Looks `key` up with the default decoding options.
    public func query(
        _ key: CacheKey, cacheType: ImageCacheType = .all,
        options: ImageCacheQueryOptions = []
    ) async throws(ImageError) -> ImageCacheQueryResult {
        try await query(key, cacheType: cacheType, options: options, decoding: .default)
    }

    /// Stores `image` and `data` under `key` with no HTTP metadata.
    public func store(_ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType = .all)
        async throws(ImageError)
    {
        try await store(image, data: data, forKey: key, cacheType: cacheType, http: nil)
    }

    /// Looks up the original image of `url` (key: its absolute string).
    public func query(
        _ url: URL, cacheType: ImageCacheType = .all,
        options: ImageCacheQueryOptions = []
    ) async throws(ImageError) -> ImageCacheQueryResult {
        try await query(CacheKey(url), cacheType: cacheType, options: options, decoding: .default)
    }

    /// Looks up the original image stored under the key string `key` (usually a URL string).
    public func query(
        _ key: String, cacheType: ImageCacheType = .all,
        options: ImageCacheQueryOptions = []
    ) async throws(ImageError) -> ImageCacheQueryResult {
        try await query(CacheKey(key), cacheType: cacheType, options: options, decoding: .default)
    }

    /// Stores `image` (and its bytes) as the original image of `url`.
    public func store(_ image: DecodedImage?, data: Data?, forKey url: URL, cacheType: ImageCacheType = .all)
        async throws(ImageError)
    {
        try await store(image, data: data, forKey: CacheKey(url), cacheType: cacheType, http: nil)
    }

    /// Stores `image` (and its bytes) under the key string `key` (usually a URL string).
    public func store(_ image: DecodedImage?, data: Data?, forKey key: String, cacheType: ImageCacheType = .all)
        async throws(ImageError)
    {
        try await store(image, data: data, forKey: CacheKey(key), cacheType: cacheType, http: nil)
    }

    /// Removes the entry stored under the key string `key`.
    public func remove(_ key: String, cacheType: ImageCacheType = .all) async {
        await remove(CacheKey(key), cacheType: cacheType)
    }
}
