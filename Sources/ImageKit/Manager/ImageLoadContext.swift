import Foundation

// Spec: MGR-08.
/// Per-load values (SDWebImage's `SDWebImageContext`, CTX-*), typed. A value set here wins
/// over the manager's for the same role.
///
/// ```swift
/// var context = ImageLoadContext()
/// context.thumbnailPixelSize = PixelSize(256)
/// context.storeCacheType = .memory
/// let result = try await manager.loadImage(url, context: context)
/// ```
public struct ImageLoadContext: Sendable {
    // Spec: CTX-03.
    /// The cache for this load; nil: the manager's.
    public var imageCache: (any ImageCaching)?
    // Spec: CTX-16.
    /// The loader for this load; nil: the manager's.
    public var imageLoader: (any ImageLoading)?
    /// The coders that decode this load; nil: the manager's.
    public var coders: ImageCodersManager?
    // Spec: CTX-07.
    /// The transformer for this load; nil: the manager's. Its key joins the cache key.
    public var transformer: (any ImageTransforming)?
    // Spec: CTX-12.
    /// The cache key filter; nil: the manager's.
    public var cacheKeyFilter: CacheKeyFilter?
    // Spec: CTX-11.
    /// Decides the bytes written to disk; nil: the manager's.
    public var cacheSerializer: ImageCacheSerializer?
    // Spec: CTX-04.
    /// Which caches to look in. Default `.all`.
    public var queryCacheType: ImageCacheType
    // Spec: CTX-05.
    /// Where the delivered image (the variant, with a transformer or thumbnail) is stored.
    /// Default `.all`. It also decides whether a disk hit is promoted to memory.
    public var storeCacheType: ImageCacheType
    // Spec: MGR-10.
    /// Where to look for the original's bytes when a variant misses. Default `.disk`.
    public var originalQueryCacheType: ImageCacheType
    // Spec: CTX-06.
    /// Where the original is stored when a variant is delivered. Default `.disk`: its
    /// downloaded bytes, so any later variant is made without a request.
    public var originalStoreCacheType: ImageCacheType
    // Spec: CTX-14.
    /// Decode to fit (or, without ``preservesAspectRatio``, to fill) this size. Part
    /// of the cache key.
    public var thumbnailPixelSize: PixelSize?
    /// See ``thumbnailPixelSize``. Default true.
    public var preservesAspectRatio: Bool
    /// The budget of ``ImageLoadOptions/scaleDownLargeImages`` in bytes of RGBA; nil: 60 MiB.
    public var scaleDownLimitBytes: Int?
    /// Limits and orientation handling of the decode; nil: ``ImageDecodingOptions/default``.
    /// (Thumbnail, scale-down and first-frame settings come from the fields and options above.)
    public var decodingOptions: ImageDecodingOptions?
    /// Where completion handlers, progress and previews are called; nil: the manager's queue.
    public var callbackQueue: DispatchQueue?
    /// Extra request headers for this load. Loads with other headers never share a transfer,
    /// a cache entry or a failed-URL entry with this one (see ``CacheKeyFilter`` for the
    /// exception).
    public var requestHeaders: [String: String]
    // Spec: CTX-09, CTX-10.
    /// This load's request modifier, asynchronous `willLoad` hook, response modifier and
    /// decryptor; each one set wins over the downloader's. A load with hooks
    /// of its own is never joined with another load.
    public var loadHooks: ImageLoadHooks
    /// How this load's transient failures are retried; nil: the loader's policy.
    public var retryPolicy: ImageRetryPolicy?

    /// A context; every value left nil uses the manager's.
    public init(
        imageCache: (any ImageCaching)? = nil, imageLoader: (any ImageLoading)? = nil,
        coders: ImageCodersManager? = nil, transformer: (any ImageTransforming)? = nil,
        cacheKeyFilter: CacheKeyFilter? = nil, cacheSerializer: ImageCacheSerializer? = nil,
        queryCacheType: ImageCacheType = .all, storeCacheType: ImageCacheType = .all,
        originalQueryCacheType: ImageCacheType = .disk, originalStoreCacheType: ImageCacheType = .disk,
        thumbnailPixelSize: PixelSize? = nil, preservesAspectRatio: Bool = true,
        scaleDownLimitBytes: Int? = nil, decodingOptions: ImageDecodingOptions? = nil,
        callbackQueue: DispatchQueue? = nil, requestHeaders: [String: String] = [:],
        loadHooks: ImageLoadHooks = ImageLoadHooks(), retryPolicy: ImageRetryPolicy? = nil
    ) {
        self.loadHooks = loadHooks
        self.retryPolicy = retryPolicy
        self.imageCache = imageCache
        self.imageLoader = imageLoader
        self.coders = coders
        self.transformer = transformer
        self.cacheKeyFilter = cacheKeyFilter
        self.cacheSerializer = cacheSerializer
        self.queryCacheType = queryCacheType
        self.storeCacheType = storeCacheType
        self.originalQueryCacheType = originalQueryCacheType
        self.originalStoreCacheType = originalStoreCacheType
        self.thumbnailPixelSize = thumbnailPixelSize
        self.preservesAspectRatio = preservesAspectRatio
        self.scaleDownLimitBytes = scaleDownLimitBytes
        self.decodingOptions = decodingOptions
        self.callbackQueue = callbackQueue
        self.requestHeaders = requestHeaders
    }
}

// Spec: TRK-05.
/// Decides the bytes a load writes to disk (SDWebImage's cache serializer), for
/// example to keep WebP downloads as PNG so later disk hits decode faster.
///
/// It is called with the image to store and its original bytes — nil when the image was
/// transformed or decoded as a thumbnail, since those bytes are not its own. Returning nil
/// lets the cache re-encode the image.
public struct ImageCacheSerializer: Sendable {
    private let body: @Sendable (DecodedImage, Data?, URL) -> Data?

    /// A serializer that calls `body` with the image, the downloaded bytes (if any) and the URL.
    public init(_ body: @escaping @Sendable (_ image: DecodedImage, _ originalData: Data?, _ url: URL) -> Data?) {
        self.body = body
    }

    /// The bytes to write to disk for `image`; nil writes nothing.
    public func cacheData(for image: DecodedImage, originalData: Data?, url: URL) -> Data? {
        body(image, originalData, url)
    }
}

// Spec: MGR-08.
/// Rewrites a load's options and context before anything else happens (SDWebImage's options
/// processor), after the manager's defaults were filled in.
public struct ImageLoadOptionsProcessor: Sendable {
    private let body: @Sendable (URL, ImageLoadOptions, ImageLoadContext) -> (ImageLoadOptions, ImageLoadContext)

    /// A processor that calls `body` with every load's URL, options and context.
    public init(
        _ body: @escaping @Sendable (URL, ImageLoadOptions, ImageLoadContext) -> (ImageLoadOptions, ImageLoadContext)
    ) {
        self.body = body
    }

    /// The options and context the load runs with.
    public func process(_ url: URL, _ options: ImageLoadOptions, _ context: ImageLoadContext) -> (
        ImageLoadOptions, ImageLoadContext
    ) {
        body(url, options, context)
    }
}
