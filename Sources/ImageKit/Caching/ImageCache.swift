import Foundation

/// Settings of an ``ImageCache``.
public struct ImageCacheConfiguration: Sendable {
    // Spec: MEM-07.
    /// Write images to memory at all (SDWebImage's `shouldCacheImagesInMemory`).
    public var cachesImagesInMemory: Bool
    /// How many disk operations run at once (reads, writes, decodes of disk hits).
    public var ioConcurrency: Int
    /// The memory layer's limits.
    public var memory: MemoryCache.Configuration
    /// The disk layer's location, limits and sweep policy.
    public var disk: DiskCacheConfiguration
    /// Let ``MemoryPressureMonitor/shared`` trim the memory cache when the process's memory
    /// pressure rises (default true).
    public var trimsOnMemoryPressure: Bool
    /// Where disk reads and writes, evictions and sizes are reported (``ImageKitTelemetry``).
    public var telemetry: ImageKitTelemetry = ImageKitTelemetry()

    /// A configuration; every parameter has the default a loader on a desktop or server wants.
    public init(
        cachesImagesInMemory: Bool = true, ioConcurrency: Int = 4,
        memory: MemoryCache.Configuration = .init(), disk: DiskCacheConfiguration = .init(),
        trimsOnMemoryPressure: Bool = true
    ) {
        self.trimsOnMemoryPressure = trimsOnMemoryPressure
        self.cachesImagesInMemory = cachesImagesInMemory
        self.ioConcurrency = ioConcurrency
        self.memory = memory
        self.disk = disk
    }
}

/// Memory and disk caching composed (SDWebImage's `SDImageCache`): decoded images in memory,
/// encoded bytes on disk.
///
/// Queries look in memory first, synchronously; disk data is read (and decoded) only on a
/// memory miss, then promoted to memory. Disk work runs on a bounded queue of its own.
///
/// ```swift
/// let cache = try ImageCache(namespace: "avatars")
/// try await cache.store(image, data: downloadedBytes, forKey: "https://example.com/a.jpg")
/// let hit = try await cache.query("https://example.com/a.jpg")
/// if let image = hit.image { … }
/// ```
public final class ImageCache: ImageCaching {
    /// The memory layer (decoded images, costed in bytes).
    public let memoryCache: any ImageMemoryCaching
    /// The disk layer (encoded bytes with their HTTP metadata).
    public let diskCache: any ImageDiskCaching
    /// The configuration the cache was made with.
    public let configuration: ImageCacheConfiguration
    /// The coders that decode disk hits and encode images stored without bytes.
    public let coders: ImageCodersManager
    let io: BlockingQueue
    let metrics: ImageKitMetrics

    /// A cache with its disk part in `directory` (default: `DiskCache.defaultDirectory(namespace)`).
    public convenience init(
        namespace: String = "default", directory: URL? = nil,
        configuration: ImageCacheConfiguration = .init(),
        coders: ImageCodersManager = .shared
    ) throws(ImageError) {
        let disk = try DiskCache(
            directory: directory ?? DiskCache.defaultDirectory(namespace: namespace),
            configuration: configuration.disk)
        self.init(
            memoryCache: MemoryCache(configuration: configuration.memory, telemetry: configuration.telemetry),
            diskCache: disk,
            configuration: configuration, coders: coders)
    }

    /// A cache over the given layers (any implementation of the protocols).
    public init(
        memoryCache: any ImageMemoryCaching, diskCache: any ImageDiskCaching,
        configuration: ImageCacheConfiguration = .init(), coders: ImageCodersManager = .shared
    ) {
        self.memoryCache = memoryCache
        self.diskCache = diskCache
        self.configuration = configuration
        self.coders = coders
        self.io = BlockingQueue(name: "ImageKit.ImageCache.io", width: configuration.ioConcurrency)
        self.metrics = ImageKitMetrics(factory: configuration.telemetry.metricsFactory)
        if configuration.trimsOnMemoryPressure, let memory = memoryCache as? MemoryCache {
            MemoryPressureMonitor.shared.watch(memory)
        }
    }

    // MARK: Memory (synchronous)

    // Spec: CQS-09.
    /// The image in memory under `key`, synchronously; never touches the disk.
    public func imageFromMemory(forKey key: CacheKey) -> DecodedImage? {
        memoryCache.image(forKey: key.identity)
    }

    // MARK: Query

    /// A cancellable handle on a query or store started with a completion handler.
    public struct Token: Sendable {
        let ticket: BlockingQueue.Ticket?
        /// Cancels the operation if it has not finished; its completion then reports
        /// ``ImageError/Code/cancelled`` (exactly once).
        public func cancel() { ticket?.cancel() }
    }

    /// Looks `key` up: memory first, then disk (decoded with `decoding`, promoted to memory).
    public func query(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) async throws(ImageError) -> ImageCacheQueryResult {
        switch prepareQuery(key, cacheType: cacheType, options: options) {
        case .answered(let result):
            return result
        case .disk(let memoryImage, let synchronous):
            if synchronous { return try diskQuery(key, memoryImage: memoryImage, options: options, decoding: decoding) }
            return try await io.run { [self] () throws(ImageError) in
                try diskQuery(key, memoryImage: memoryImage, options: options, decoding: decoding)
            }
        }
    }

    /// Completion-handler form. Memory answers (and `queryDiskDataSync` / `queryMemoryDataSync`
    /// disk answers) call `completion` before returning; others call it on the IO queue.
    @discardableResult
    public func query(
        _ key: CacheKey, cacheType: ImageCacheType = .all, options: ImageCacheQueryOptions = [],
        decoding: ImageDecodingOptions = .default,
        completion: @escaping @Sendable (Result<ImageCacheQueryResult, ImageError>) -> Void
    ) -> Token {
        switch prepareQuery(key, cacheType: cacheType, options: options) {
        case .answered(let result):
            completion(.success(result))
            return Token(ticket: nil)
        case .disk(let memoryImage, let synchronous):
            if synchronous {
                completion(
                    Result { () throws(ImageError) in
                        try diskQuery(key, memoryImage: memoryImage, options: options, decoding: decoding)
                    })
                return Token(ticket: nil)
            }
            let ticket = io.submit(
                { [self] () throws(ImageError) in
                    try diskQuery(key, memoryImage: memoryImage, options: options, decoding: decoding)
                }, completion: completion)
            return Token(ticket: ticket)
        }
    }

    /// The query answered without waiting: a memory hit, or a disk hit the options ask for synchronously.
    public func querySynchronously(
        _ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) -> Result<ImageCacheQueryResult, ImageError>? {
        switch prepareQuery(key, cacheType: cacheType, options: options) {
        case .answered(let result):
            return .success(result)
        case .disk(let memoryImage, let synchronous):
            guard synchronous else { return nil }
            return Result { () throws(ImageError) in
                try diskQuery(key, memoryImage: memoryImage, options: options, decoding: decoding)
            }
        }
    }

    private enum QueryPlan {
        case answered(ImageCacheQueryResult)
        case disk(memoryImage: DecodedImage?, synchronous: Bool)
    }

    // Spec: CQS-04.
    /// Steps 1–6 of the query: the memory part, and whether (and how) the disk must be read.
    private func prepareQuery(_ key: CacheKey, cacheType: ImageCacheType, options: ImageCacheQueryOptions) -> QueryPlan
    {
        guard cacheType != .none else { return .answered(.miss) }
        var image: DecodedImage?
        if cacheType != .disk {
            image = memoryCache.image(forKey: key.identity)
            if options.contains(.decodeFirstFrameOnly), let animated = image, animated.isAnimated {
                image = animated.firstFrame
            }
        }
        if cacheType == .memory || (image != nil && !options.contains(.queryMemoryData)) {
            return .answered(ImageCacheQueryResult(image: image, cacheType: image == nil ? .none : .memory))
        }
        let synchronous = image != nil ? options.contains(.queryMemoryDataSync) : options.contains(.queryDiskDataSync)
        return .disk(memoryImage: image, synchronous: synchronous)
    }

    // Spec: CQS-04.
    /// Steps 7–8 of the query: read the bytes; decode them only on a memory miss, then promote.
    private func diskQuery(
        _ key: CacheKey, memoryImage: DecodedImage?, options: ImageCacheQueryOptions,
        decoding: ImageDecodingOptions
    ) throws(ImageError) -> ImageCacheQueryResult {
        let started = DispatchTime.now().uptimeNanoseconds
        let entry =
            (diskCache as? DiskCache)?.entry(forKey: key.identity)
            ?? diskCache.data(forKey: key.identity).map { ($0, diskCache.metadata(forKey: key.identity)) }
        metrics.diskRead.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        if let memoryImage {
            return ImageCacheQueryResult(image: memoryImage, data: entry?.0, cacheType: .memory, metadata: entry?.1)
        }
        guard let (data, metadata) = entry else { return .miss }
        if options.contains(.avoidDecodeImage) {
            return ImageCacheQueryResult(image: nil, data: data, cacheType: .disk, metadata: metadata)
        }
        var decodingOptions = decoding
        if options.contains(.decodeFirstFrameOnly) { decodingOptions.firstFrameOnly = true }
        guard let image = try? coders.decode(data, options: decodingOptions) else {
            // Undecodable bytes: report them, but as no image (the caller loads it afresh).
            return ImageCacheQueryResult(image: nil, data: data, cacheType: .disk, metadata: metadata)
        }
        // A first-frame-only decode is not the whole image: it is not promoted under the key.
        if configuration.cachesImagesInMemory && !options.contains(.skipMemoryPromotion)
            && !decodingOptions.firstFrameOnly
        {
            memoryCache.setImage(image, forKey: key.identity)
        }
        return ImageCacheQueryResult(image: image, data: data, cacheType: .disk, metadata: metadata)
    }

    // MARK: Store

    /// Stores `image` in memory and its bytes (or a re-encode) on disk, per `cacheType`.
    public func store(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType,
        http: HTTPCacheHeaders?
    ) async throws(ImageError) {
        guard let work = prepareStore(image, data: data, forKey: key, cacheType: cacheType, http: http) else { return }
        try await io.run(work)
    }

    /// Completion-handler form of ``store(_:data:forKey:cacheType:http:)``.
    @discardableResult
    public func store(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType = .all,
        http: HTTPCacheHeaders? = nil,
        completion: @escaping @Sendable (Result<Void, ImageError>) -> Void
    ) -> Token {
        guard let work = prepareStore(image, data: data, forKey: key, cacheType: cacheType, http: http) else {
            completion(.success(()))
            return Token(ticket: nil)
        }
        return Token(ticket: io.submit(work, completion: completion))
    }

    public func storeData(_ data: Data, forKey key: CacheKey, http: HTTPCacheHeaders?) async throws(ImageError) {
        guard !data.isEmpty else { return }
        try await io.run { [self] () throws(ImageError) in
            try timedDiskWrite { () throws(ImageError) in
                try diskCache.store(data, forKey: key.identity, expiryDate: nil, http: http)
            }
        }
    }

    // Spec: CQS-02.
    /// The memory write happens now, on the caller's thread; the disk write is returned
    /// as work for the IO queue (nil when there is none).
    private func prepareStore(
        _ image: DecodedImage?, data: Data?, forKey key: CacheKey, cacheType: ImageCacheType,
        http: HTTPCacheHeaders?
    ) -> (@Sendable () throws(ImageError) -> Void)? {
        guard let image, !image.frames.isEmpty, !image.isPreview, !image.isPartial else { return nil }
        if cacheType.includesMemory && configuration.cachesImagesInMemory {
            memoryCache.setImage(image, forKey: key.identity)
        }
        guard cacheType.includesDisk else { return nil }
        return { [self] () throws(ImageError) in
            let bytes: Data
            if let data { bytes = data } else { bytes = try Self.reencode(image, coders: coders) }
            try timedDiskWrite { () throws(ImageError) in
                try diskCache.store(bytes, forKey: key.identity, expiryDate: nil, http: http)
            }
        }
    }

    /// Runs a disk write, reporting its duration and the disk cache's size after it.
    private func timedDiskWrite(_ write: () throws(ImageError) -> Void) throws(ImageError) {
        let started = DispatchTime.now().uptimeNanoseconds
        defer {
            metrics.diskWrite.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
            metrics.diskSize.record(diskCache.totalSize)
        }
        try write()
    }

    // Spec: CQS-03.
    /// A lazy animation's own bytes; else the image's own format when ImageKit encodes
    /// it (GIF, APNG and WebP keep animations), else animated → GIF, alpha → PNG, otherwise JPEG.
    /// Speed over size: PNG at libdeflate level 1.
    static func reencode(_ image: DecodedImage, coders: ImageCodersManager) throws(ImageError) -> Data {
        // A lazy animation still has its encoded bytes: never re-encode decoded frames then.
        if let animation = image.animation { return animation.data }
        let format: ImageFormat
        // HEIC and JPEG XL are written far slower than a cache write should take (x265, libjxl's
        // effort 7): images of those formats are stored as the rule's JPEG or PNG.
        if image.format.isCodecSupported && ![.heic, .jpegXL].contains(image.format)
            && (!image.isAnimated || [.gif, .webp, .png].contains(image.format))
        {
            format = image.format
        } else {
            format = image.preferredEncodingFormat
        }
        // Level 1 for PNG: 10.3–10.8× faster than libpng at zlib level 6 for 0.99–1.03× its
        // bytes on a 1024×768 photo (`bench --filter encode-png-level`); a cache is not an archive.
        return try coders.encode(
            image, as: format,
            options: ImageEncodingOptions(
                quality: 0.9, lossless: format == .webp && !image.isOpaque,
                compressionLevel: 1))
    }

    // MARK: Remove, clear, contains

    public func remove(_ key: CacheKey, cacheType: ImageCacheType = .all) async {
        if cacheType.includesMemory { memoryCache.removeImage(forKey: key.identity) }
        if cacheType.includesDisk { _ = try? await io.run { [diskCache] in diskCache.remove(key.identity) } }
    }

    public func clear(_ cacheType: ImageCacheType = .all) async {
        if cacheType.includesMemory { memoryCache.removeAll() }
        if cacheType.includesDisk { _ = try? await io.run { [diskCache] in diskCache.removeAll() } }
    }

    public func containsImage(_ key: CacheKey, cacheType: ImageCacheType = .all) async -> ImageCacheType {
        if cacheType.includesMemory && memoryCache.image(forKey: key.identity) != nil { return .memory }
        guard cacheType.includesDisk else { return .none }
        let onDisk = (try? await io.run { [diskCache] in diskCache.contains(key.identity) }) ?? false
        return onDisk ? .disk : .none
    }

    public func refreshMetadata(forKey key: CacheKey, http: HTTPCacheHeaders) async -> Bool {
        (try? await io.run { [diskCache] in diskCache.refresh(forKey: key.identity, expiryDate: nil, http: http) })
            ?? false
    }

    /// The expiry and size sweep of the disk part, on the IO queue.
    @discardableResult
    public func removeExpiredData() async -> DiskCacheSweepReport {
        (try? await io.run { [diskCache] in diskCache.removeExpired() }) ?? DiskCacheSweepReport(skipped: true)
    }
}
