import Foundation

/// Per-load values (SDWebImage's `SDWebImageContext`, CTX-*), typed. A value set here wins
/// over the manager's for the same role (MGR-08).
///
/// ```swift
/// var context = ImageLoadContext()
/// context.thumbnailPixelSize = PixelSize(256)
/// context.storeCacheType = .memory
/// let result = try await manager.loadImage(url, context: context)
/// ```
public struct ImageLoadContext: Sendable {
    /// The cache for this load (CTX-03); nil: the manager's.
    public var imageCache: (any ImageCaching)?
    /// The loader for this load (CTX-16); nil: the manager's.
    public var imageLoader: (any ImageLoading)?
    /// The coders that decode this load; nil: the manager's.
    public var coders: ImageCodersManager?
    /// The transformer for this load (CTX-07); nil: the manager's. Its key joins the cache key.
    public var transformer: (any ImageTransforming)?
    /// The cache key filter (CTX-12); nil: the manager's.
    public var cacheKeyFilter: CacheKeyFilter?
    /// Decides the bytes written to disk (CTX-11); nil: the manager's.
    public var cacheSerializer: ImageCacheSerializer?
    /// Which caches to look in (CTX-04). Default `.all`.
    public var queryCacheType: ImageCacheType
    /// Where the delivered image (the variant, with a transformer or thumbnail) is stored
    /// (CTX-05). Default `.all`. It also decides whether a disk hit is promoted to memory.
    public var storeCacheType: ImageCacheType
    /// Where to look for the original's bytes when a variant misses (MGR-10). Default `.disk`.
    public var originalQueryCacheType: ImageCacheType
    /// Where the original is stored when a variant is delivered (CTX-06). Default `.disk`: its
    /// downloaded bytes, so any later variant is made without a request.
    public var originalStoreCacheType: ImageCacheType
    /// Decode to fit (or, without ``preservesAspectRatio``, to fill) this size (CTX-14). Part
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
    /// This load's request modifier, asynchronous `willLoad` hook, response modifier and
    /// decryptor (CTX-09, CTX-10); each one set wins over the downloader's. A load with hooks
    /// of its own is never joined with another load.
    public var loadHooks: ImageLoadHooks
    /// How this load's transient failures are retried; nil: the loader's policy.
    public var retryPolicy: ImageRetryPolicy?

    public init(imageCache: (any ImageCaching)? = nil, imageLoader: (any ImageLoading)? = nil,
                coders: ImageCodersManager? = nil, transformer: (any ImageTransforming)? = nil,
                cacheKeyFilter: CacheKeyFilter? = nil, cacheSerializer: ImageCacheSerializer? = nil,
                queryCacheType: ImageCacheType = .all, storeCacheType: ImageCacheType = .all,
                originalQueryCacheType: ImageCacheType = .disk, originalStoreCacheType: ImageCacheType = .disk,
                thumbnailPixelSize: PixelSize? = nil, preservesAspectRatio: Bool = true,
                scaleDownLimitBytes: Int? = nil, decodingOptions: ImageDecodingOptions? = nil,
                callbackQueue: DispatchQueue? = nil, requestHeaders: [String: String] = [:],
                loadHooks: ImageLoadHooks = ImageLoadHooks(), retryPolicy: ImageRetryPolicy? = nil) {
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

/// Decides the bytes a load writes to disk (SDWebImage's cache serializer, TRK-05), for
/// example to keep WebP downloads as PNG so later disk hits decode faster.
///
/// It is called with the image to store and its original bytes — nil when the image was
/// transformed or decoded as a thumbnail, since those bytes are not its own. Returning nil
/// lets the cache re-encode the image.
public struct ImageCacheSerializer: Sendable {
    private let body: @Sendable (DecodedImage, Data?, URL) -> Data?

    public init(_ body: @escaping @Sendable (_ image: DecodedImage, _ originalData: Data?, _ url: URL) -> Data?) {
        self.body = body
    }

    public func cacheData(for image: DecodedImage, originalData: Data?, url: URL) -> Data? {
        body(image, originalData, url)
    }
}

/// Rewrites a load's options and context before anything else happens (SDWebImage's options
/// processor, MGR-08), after the manager's defaults were filled in.
public struct ImageLoadOptionsProcessor: Sendable {
    private let body: @Sendable (URL, ImageLoadOptions, ImageLoadContext) -> (ImageLoadOptions, ImageLoadContext)

    public init(_ body: @escaping @Sendable (URL, ImageLoadOptions, ImageLoadContext) -> (ImageLoadOptions, ImageLoadContext)) {
        self.body = body
    }

    public func process(_ url: URL, _ options: ImageLoadOptions, _ context: ImageLoadContext) -> (ImageLoadOptions, ImageLoadContext) {
        body(url, options, context)
    }
}
