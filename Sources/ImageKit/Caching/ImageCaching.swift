import Foundation

/// Which cache layers an operation touches (SDWebImage's `SDImageCacheType`); as a result, where
/// an image came from.
public enum ImageCacheType: Sendable, Hashable {
    case none
    case memory
    case disk
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
}

/// The answer to a cache query.
public struct ImageCacheQueryResult: Sendable {
    public var image: DecodedImage?
    /// The encoded bytes, when they were read from disk.
    public var data: Data?
    /// Where the image (or, without an image, the data) came from; `.none` for a miss.
    public var cacheType: ImageCacheType
    /// The disk entry's metadata (HTTP validators, expiry), when the disk was read.
    public var metadata: DiskCacheMetadata?

    public init(image: DecodedImage? = nil, data: Data? = nil, cacheType: ImageCacheType = .none, metadata: DiskCacheMetadata? = nil) {
        self.image = image
        self.data = data
        self.cacheType = cacheType
        self.metadata = metadata
    }

    public static let miss = ImageCacheQueryResult()
}

/// An image cache: memory, disk, or several composed (SDWebImage's `SDImageCache` protocol).
public protocol ImageCaching: Sendable {
    /// Looks `key` up in the layers `cacheType` names (CQS-04).
    func query(_ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
               decoding: ImageDecodingOptions) async throws(ImageError) -> ImageCacheQueryResult
    /// Stores `image` in memory and its bytes on disk, per `cacheType`. Without `data`, the disk
    /// gets the image re-encoded (CQS-03). Previews and partial images are never stored.
    func store(_ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType,
               http: HTTPCacheHeaders?) async throws(ImageError)
    func remove(_ key: CacheKey, cacheType: ImageCacheType) async
    func clear(_ cacheType: ImageCacheType) async
    /// Where `key` is cached: `.memory`, `.disk` or `.none`.
    func containsImage(_ key: CacheKey, cacheType: ImageCacheType) async -> ImageCacheType
}

extension ImageCaching {
    public func query(_ key: CacheKey, cacheType: ImageCacheType = .all,
                      options: ImageCacheQueryOptions = []) async throws(ImageError) -> ImageCacheQueryResult {
        try await query(key, cacheType: cacheType, options: options, decoding: .default)
    }

    public func store(_ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType = .all) async throws(ImageError) {
        try await store(image, data: data, forKey: key, cacheType: cacheType, http: nil)
    }
}
