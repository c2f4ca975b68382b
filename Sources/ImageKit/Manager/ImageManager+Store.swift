import Foundation
import Logging

// Spec: MGR-15/16, CQS-02.
/// The store step: memory first, before the image is delivered, so the
/// next load of it is a memory hit; disk after, in the background unless `.waitStoreCache`.
extension ImageManager {
    /// One write to a cache layer.
    private struct Write: Sendable {
        var image: DecodedImage?
        var data: Data?
        var key: CacheKey
        var http: HTTPCacheHeaders?
    }

    /// Stores what a download produced: the variant under the plan's key; for a variant, also
    /// the original bytes under the URL's own key (`originalStoreCacheType`).
    func store(_ produced: Produced, data: Data, http: HTTPCacheHeaders, plan: ImageLoadPlan) async -> ImageError? {
        var memory: [Write] = []
        var disk: [Write] = []
        let key = plan.key
        if key.isOriginal {
            let type = plan.context.storeCacheType
            if type.includesMemory, let image = produced.delivered,
                Self.isWhole(image, signature: produced.signature, plan: plan)
            {
                memory.append(Write(image: image, key: key))
            }
            if type.includesDisk {
                let bytes =
                    produced.delivered.flatMap {
                        plan.serializer?.cacheData(for: $0, originalData: data, url: plan.url)
                    } ?? data
                disk.append(Write(image: produced.delivered, data: bytes, key: key, http: http))
            }
            return await commit(memory: memory, disk: disk, plan: plan)
        }
        let originalType = plan.context.originalStoreCacheType
        // Only a full decode is the original image (not a thumbnail or a scaled-down one).
        let decodedIsOriginal = key.thumbnail == nil && key.decodeVariant == nil
        if originalType.includesMemory, decodedIsOriginal, let decoded = produced.decoded,
            Self.isWhole(decoded, signature: produced.signature, plan: plan)
        {
            memory.append(Write(image: decoded, key: key.original))
        }
        if originalType.includesDisk {
            let serialized =
                decodedIsOriginal
                ? produced.decoded.flatMap { plan.serializer?.cacheData(for: $0, originalData: data, url: plan.url) }
                : nil
            disk.append(Write(image: nil, data: serialized ?? data, key: key.original, http: http))
        }
        let (variantMemory, variantDisk) = variantWrites(produced, originalData: data, http: http, plan: plan)
        return await commit(memory: memory + variantMemory, disk: disk + variantDisk, plan: plan)
    }

    /// Stores a variant made from the cached original (the original is cached already).
    func storeVariant(_ produced: Produced, originalData: Data?, http: HTTPCacheHeaders?, plan: ImageLoadPlan) async
        -> ImageError?
    {
        let (memory, disk) = variantWrites(produced, originalData: originalData, http: http, plan: plan)
        return await commit(memory: memory, disk: disk, plan: plan)
    }

    /// The variant's writes under `storeCacheType`: its image in memory; on disk, the
    /// serializer's bytes or a re-encode by the cache (the original bytes are not the variant's).
    private func variantWrites(
        _ produced: Produced, originalData: Data?, http: HTTPCacheHeaders?,
        plan: ImageLoadPlan
    ) -> ([Write], [Write]) {
        guard let image = produced.delivered, Self.isWhole(image, signature: produced.signature, plan: plan) else {
            return ([], [])
        }
        let type = plan.context.storeCacheType
        var memory: [Write] = []
        var disk: [Write] = []
        if type.includesMemory { memory.append(Write(image: image, key: plan.key)) }
        if type.includesDisk {
            let bytes = plan.serializer?.cacheData(for: image, originalData: nil, url: plan.url)
            disk.append(Write(image: image, data: bytes, key: plan.key, http: http))
        }
        return (memory, disk)
    }

    /// Whether `image` is all of what its key names: not a first-frame-only decode of an
    /// animation (the key does not say "first frame"), not partial.
    private static func isWhole(_ image: DecodedImage, signature: ImageSignature?, plan: ImageLoadPlan) -> Bool {
        guard !image.isPartial, !image.isPreview else { return false }
        guard plan.decoding.firstFrameOnly, let signature else { return true }
        return !(signature.isAnimated || signature.format == .gif)
    }

    /// Memory writes now; disk writes awaited with `.waitStoreCache`, else in the background.
    /// Failures go to the store-error handler; the first is returned when awaited.
    private func commit(memory: [Write], disk: [Write], plan: ImageLoadPlan) async -> ImageError? {
        let cache = plan.cache
        // `file:` and `data:` bytes are local already: a disk copy would only go stale.
        let disk = plan.storesLoadedBytesOnDisk ? disk : []
        for write in memory {
            try? await cache.store(write.image, data: nil, forKey: write.key, cacheType: .memory, http: nil)
        }
        guard !disk.isEmpty else { return nil }
        let handler = configuration.storeErrorHandler
        let logger = self.logger
        let writeAll: @Sendable () async -> ImageError? = { [self] in
            var first: ImageError?
            for write in disk {
                do throws(ImageError) {
                    if write.image == nil, let data = write.data {
                        try await cache.storeData(data, forKey: write.key, http: write.http)
                    } else {
                        try await cache.store(
                            write.image, data: write.data, forKey: write.key, cacheType: .disk, http: write.http)
                    }
                } catch {
                    if self.storeWarnings.shouldLog() {
                        logger.warning(
                            "cache store failed",
                            metadata: ["imagekit.cache_key": "\(write.key)", "imagekit.error": "\(error)"])
                    }
                    handler?(error, write.key)
                    if first == nil { first = error }
                }
            }
            return first
        }
        if plan.options.contains(.waitStoreCache) { return await writeAll() }
        Task.detached(priority: .utility) { _ = await writeAll() }
        return nil
    }
}
