import Foundation
import Synchronization

// Spec: MGR-08.
/// Everything one load needs, resolved once: the context merged with the manager's defaults
/// and processed, the final cache key, the decode options, and the key under which
/// identical loads are joined. A class: it is passed through every stage, and copying a
/// struct of this many references cost a fifth of a memory hit.
final class ImageLoadPlan: Sendable {
    let url: URL
    let urlString: String
    let options: ImageLoadOptions
    let context: ImageLoadContext
    let cache: any ImageCaching
    let loader: any ImageLoading
    let coders: ImageCodersManager
    let transformer: (any ImageTransforming)?
    let serializer: ImageCacheSerializer?
    /// The key the delivered image is cached under.
    let key: CacheKey
    let decoding: ImageDecodingOptions
    let cacheQueryOptions: ImageCacheQueryOptions

    init(
        url: URL, urlString: String, options: ImageLoadOptions, context: ImageLoadContext, cache: any ImageCaching,
        loader: any ImageLoading, coders: ImageCodersManager, transformer: (any ImageTransforming)?,
        serializer: ImageCacheSerializer?, key: CacheKey, decoding: ImageDecodingOptions,
        cacheQueryOptions: ImageCacheQueryOptions
    ) {
        self.url = url
        self.urlString = urlString
        self.options = options
        self.context = context
        self.cache = cache
        self.loader = loader
        self.coders = coders
        self.transformer = transformer
        self.serializer = serializer
        self.key = key
        self.decoding = decoding
        self.cacheQueryOptions = cacheQueryOptions
    }

    /// The options a job's outcome depends on; the others (priority, progressive, retry …)
    /// belong to each caller.
    static let jobOptions: ImageLoadOptions = [
        .refreshCached, .handleCookies, .allowInvalidSSLCertificates, .transformAnimatedImage, .scaleDownLargeImages,
        .queryMemoryData, .fromCacheOnly, .fromLoaderOnly, .avoidDecodeImage, .decodeFirstFrameOnly, .preloadAllFrames,
        .waitStoreCache, .revalidateStaleEntries, .thumbnailFromFirstScans,
    ]

    /// Numbers the loads with hooks of their own, each its own job.
    static let hookedLoads = Atomic<Int>(0)

    /// The failed-URL list's key: the URL, and the request headers' digest (a failure with one
    /// tenant's headers says nothing of another's).
    var failedURLKey: String {
        FailedURLList.key(urlString, requestHeaders: context.requestHeaders)
    }

    /// Whether what the loader delivers may be written to the disk cache: not for `file:` and
    /// `data:` URLs, whose bytes are already local (a copy would only go stale).
    var storesLoadedBytesOnDisk: Bool { !url.isFileURL && url.scheme?.lowercased() != "data" }

    var queriesCache: Bool { !options.contains(.fromLoaderOnly) && context.queryCacheType != .none }

    // Spec: MGR-10.
    /// A variant's miss may be served from the original's cached bytes.
    var queriesOriginal: Bool {
        !key.isOriginal && !options.contains(.fromLoaderOnly) && context.originalQueryCacheType != .none
    }

    var priority: ImageLoadPriority {
        options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
    }

    /// Loads with the same job key share one job: the same final key, and the same settings
    /// wherever they change the outcome. Built only for loads that miss memory.
    func makeJobKey() -> String {
        // Components given per load join only loads given the same instance.
        func identity(_ component: Any?) -> String {
            guard let component else { return "m" }
            return String(UInt(bitPattern: ObjectIdentifier(component as AnyObject).hashValue))
        }
        var jobKey = key.identity
        jobKey += "|\(options.intersection(Self.jobOptions).rawValue)"
        jobKey +=
            "|\(context.queryCacheType)\(context.storeCacheType)\(context.originalQueryCacheType)\(context.originalStoreCacheType)"
        jobKey +=
            "|\(decoding.limits.maxPixelsPerFrame),\(decoding.limits.maxTotalBytes),\(decoding.allowsPartialImages),\(decoding.firstFrameOnly)"
        jobKey += "|\(identity(context.imageCache)),\(identity(context.imageLoader)),\(identity(context.coders))"
        if !context.requestHeaders.isEmpty { jobKey += "|h" + RequestHeaderDigest.digest(context.requestHeaders) }
        // Hooks are closures that cannot be compared: a load with hooks of its own joins no other.
        if !context.loadHooks.isEmpty {
            jobKey += "|hooks" + String(ImageLoadPlan.hookedLoads.add(1, ordering: .relaxed).newValue)
        }
        if let retry = context.retryPolicy {
            jobKey += "|r\(retry.maxRetries),\(retry.baseDelay),\(retry.maxDelay),\(retry.maxRetryAfter)"
        }
        return jobKey
    }

    /// A cache answer that ends the query: an image, or bytes when bytes are all that is wanted.
    func isHit(_ hit: ImageCacheQueryResult) -> Bool {
        hit.image != nil || (options.contains(.avoidDecodeImage) && hit.data != nil)
    }

    func result(from hit: ImageCacheQueryResult) -> ImageLoadResult {
        var result = ImageLoadResult(
            image: delivering(hit.image), data: hit.data, cacheType: hit.cacheType, url: url, cacheKey: key)
        result.httpHeaders = hit.metadata?.http
        return result
    }

    /// A cached image as this load wants it: with ``ImageLoadOptions/preloadAllFrames``, a lazy
    /// animation decoded whole (SDWebImage preloads the cached `SDAnimatedImage` the same way);
    /// one whose frames do not all decode is delivered lazy, as cached.
    func delivering(_ image: DecodedImage?) -> DecodedImage? {
        guard let image, image.isLazy, options.contains(.preloadAllFrames) else { return image }
        return (try? image.loadingAllFrames()) ?? image
    }

    // Spec: ERR-05.
    /// No image and no error (a `.fromCacheOnly` miss, a vetoed download).
    func emptyResult() -> ImageLoadResult {
        ImageLoadResult(image: nil, data: nil, cacheType: .none, url: url, cacheKey: key)
    }
}

extension ImageManager {
    /// Fills the context with the manager's defaults, runs the options processor, and derives
    /// the key and decode options.
    func resolve(_ url: URL, urlString: String? = nil, options: ImageLoadOptions, context: ImageLoadContext)
        -> ImageLoadPlan
    {
        let urlString = urlString ?? url.absoluteString
        var options = options
        var context = context
        if context.transformer == nil, let transformer { context.transformer = transformer }
        if context.cacheKeyFilter == nil, let cacheKeyFilter { context.cacheKeyFilter = cacheKeyFilter }
        if context.cacheSerializer == nil, let cacheSerializer { context.cacheSerializer = cacheSerializer }
        if let optionsProcessor { (options, context) = optionsProcessor.process(url, options, context) }

        var decoding = context.decodingOptions ?? .default
        decoding.firstFrameOnly = decoding.firstFrameOnly || options.contains(.decodeFirstFrameOnly)
        // Animations play from their bytes (ANI-01) unless every frame is wanted now: by the
        // caller, or by a transformer that transforms animations.
        decoding.decodesFramesLazily =
            !options.contains(.preloadAllFrames)
            && !(context.transformer != nil && options.contains(.transformAnimatedImage))
        var key = context.cacheKeyFilter.map { CacheKey(url: url, filter: $0) } ?? CacheKey(urlString)
        // Per-load headers may change the image (another tenant, another token): their digest
        // joins the key, unless the key filter says the image does not depend on them.
        if !context.requestHeaders.isEmpty, !(context.cacheKeyFilter?.ignoresRequestHeaders ?? false) {
            key = key.varying(byRequestHeaders: context.requestHeaders)
        }
        // A local file's entry is valid for one version of the file.
        if url.isFileURL, let version = FileVersion(path: url.path) { key = key.varying(byFileVersion: version) }
        if let thumbnail = context.thumbnailPixelSize, thumbnail.width > 0, thumbnail.height > 0 {
            decoding.thumbnailPixelSize = thumbnail
            decoding.preservesAspectRatio = context.preservesAspectRatio
            key = key.thumbnail(
                width: Double(thumbnail.width), height: Double(thumbnail.height),
                preservesAspectRatio: context.preservesAspectRatio)
        }
        if options.contains(.scaleDownLargeImages) {
            let limit = context.scaleDownLimitBytes ?? DecodedImage.defaultScaleDownLimitBytes
            decoding.scaleDownLimitBytes = limit
            key = key.decoded(as: "ScaleDown(\(limit))")
        }
        if !decoding.appliesOrientation { key = key.decoded(as: "KeepOrientation") }
        if let transformer = context.transformer { key = key.transformed(by: transformer.transformerKey) }

        var queryOptions: ImageCacheQueryOptions = []
        // A revalidation needs the disk entry's validators even when memory has the image.
        if options.contains(.queryMemoryData) || options.contains(.refreshCached) {
            queryOptions.insert(.queryMemoryData)
        }
        if options.contains(.queryMemoryDataSync) { queryOptions.insert(.queryMemoryDataSync) }
        if options.contains(.queryDiskDataSync) { queryOptions.insert(.queryDiskDataSync) }
        if options.contains(.decodeFirstFrameOnly) { queryOptions.insert(.decodeFirstFrameOnly) }
        if options.contains(.avoidDecodeImage) { queryOptions.insert(.avoidDecodeImage) }
        if !context.storeCacheType.includesMemory { queryOptions.insert(.skipMemoryPromotion) }

        let cache = context.imageCache ?? self.cache
        let loader = context.imageLoader ?? self.loader
        let coders = context.coders ?? self.coders
        return ImageLoadPlan(
            url: url, urlString: urlString, options: options, context: context, cache: cache,
            loader: loader, coders: coders, transformer: context.transformer, serializer: context.cacheSerializer,
            key: key, decoding: decoding, cacheQueryOptions: queryOptions)
    }
}
