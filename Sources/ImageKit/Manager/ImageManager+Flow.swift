import Foundation
import Logging

/// The load flow of one job (DESIGN §5, steps 6–10): disk, original-cache fallback, loader,
/// decode, transform, store. Every `await` is a point where the job may have been stopped by
/// its last caller; then nothing more is delivered or stored.
extension ImageManager {
    /// Minimum time between two previews of one load.
    static let previewInterval = 0.1

    /// Seconds on the monotonic clock.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    func run(_ job: ImageLoadJob) async {
        let plan = job.plan
        let started = Self.now()
        var timings = ImageLoadTimings()
        var logger = self.logger
        if logger.logLevel <= .debug {
            logger[metadataKey: "imagekit.url"] = "\(plan.urlString)"
            logger[metadataKey: "imagekit.cache_key"] = "\(plan.key)"
            logger[metadataKey: "imagekit.job"] = "\(UInt(bitPattern: ObjectIdentifier(job).hashValue) & 0xFFFFFF)"
        }
        // 6. The caches: memory again (a load that finished meanwhile), then disk.
        var cached: ImageCacheQueryResult?
        if plan.queriesCache {
            do {
                let hit = try await plan.cache.query(plan.key, cacheType: plan.context.queryCacheType,
                                                     options: plan.cacheQueryOptions, decoding: plan.decoding)
                if plan.isHit(hit) { cached = hit }
            } catch {
                // An unreadable cache is a miss; the image is loaded afresh.
                logger.debug("cache query failed", metadata: ["imagekit.error": "\(error)"])
            }
            timings.cacheQuery = Self.now() - started
            logger.debug("cache queried", metadata: ["imagekit.hit": "\(cached.map { "\($0.cacheType)" } ?? "none")"])
            if Task.isCancelled { return }
        }

        var revalidates = false
        if let cached {
            let stale = plan.options.contains(.revalidateStaleEntries) && !(cached.metadata?.isFresh(at: Date()) ?? true)
            revalidates = (plan.options.contains(.refreshCached) || stale) && !plan.options.contains(.fromCacheOnly)
                && plan.loader.canLoad(plan.url) && (configuration.shouldDownload?(plan.url) ?? true)
            var result = plan.result(from: cached)
            result.timings = timings
            result.timings.total = Self.now() - started
            guard revalidates else {
                succeed(job, result)
                return
            }
            // MGR-12: the cached image first, then the revalidation.
            job.deliverIntermediate(result)
        } else if plan.queriesOriginal, var result = await variantFromOriginal(job) {
            result.timings.cacheQuery = timings.cacheQuery
            result.timings.total = Self.now() - started
            logger.debug("variant made from the cached original")
            succeed(job, result)
            return
        }
        if Task.isCancelled { return }

        // MGR-11: the download decision.
        guard !plan.options.contains(.fromCacheOnly), configuration.shouldDownload?(plan.url) ?? true else {
            job.finish(cached == nil ? .success(plan.emptyResult()) : nil)
            return
        }

        var request = ImageLoadRequest(url: plan.url, priority: job.priority, headers: plan.context.requestHeaders,
                                       retryPolicy: plan.context.retryPolicy, hooks: plan.context.loadHooks)
        if revalidates, let http = cached?.metadata?.http, http.etag != nil || http.lastModified != nil {
            request.cachedValidators = http
        }
        if plan.options.contains(.allowInvalidSSLCertificates) { request.allowsInvalidSSLCertificates = true }
        if plan.options.contains(.handleCookies) { request.handlesCookies = true }

        let response: ImageLoadResponse
        var decoding = plan.decoding
        let downloadStarted = Self.now()
        logger.debug("loading", metadata: ["imagekit.priority": "\(request.priority)"])
        let loaded = await load(request, for: job, progressive: !revalidates)
        timings.download = Self.now() - downloadStarted
        switch loaded {
        case .success(let loaded):
            response = loaded.response
            decoding.stopsAfterDCScans = loaded.isFirstScansOnly
        case .failure(let error):
            if Task.isCancelled { return }
            fail(job, error, at: .load)
            return
        }
        if Task.isCancelled { return }

        if response.isNotModified {
            let http = response.cacheHeaders
            _ = await plan.cache.refreshMetadata(forKey: plan.key, http: http)
            if !plan.key.isOriginal { _ = await plan.cache.refreshMetadata(forKey: plan.key.original, http: http) }
            job.send(.notModified(response.metrics))
            job.finish(nil)
            return
        }

        // 9. Decode and transform, off the caller and the network threads.
        job.beginFinalizing()
        let staged: Result<Produced, StagedError>
        let queued = Self.now()
        do {
            staged = try await decodeQueue.run { [decoding] () throws(ImageError) -> Result<Produced, StagedError> in
                let dequeued = Self.now()
                do throws(StagedError) {
                    var produced = try Self.produce(from: response.data, plan: plan, image: nil, decoding: decoding)
                    produced.queueWait = dequeued - queued
                    return .success(produced)
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            if Task.isCancelled { return }
            fail(job, error, at: .transform)
            return
        }
        let produced: Produced
        switch staged {
        case .success(let value):
            produced = value
        case .failure(let failure):
            if Task.isCancelled { return }
            // Bytes cut after the first scans are not the URL's bytes: their failure is not its.
            fail(job, failure.error, at: decoding.stopsAfterDCScans ? .transform : failure.stage)
            return
        }
        timings.queueWait = produced.queueWait
        timings.decode = produced.decodeDuration
        timings.transform = produced.transformDuration
        record(produced)
        logger.debug("decoded", metadata: ["imagekit.decode_seconds": "\(produced.decodeDuration ?? 0)"])
        if Task.isCancelled { return }

        // 10. Store, then deliver. Bytes cut after the first scans are no original: only the
        // thumbnail made from them is kept.
        let storing = Self.now()
        let storeError = decoding.stopsAfterDCScans
            ? await storeVariant(produced, originalData: nil, http: response.cacheHeaders, plan: plan)
            : await store(produced, data: response.data, http: response.cacheHeaders, plan: plan)
        timings.store = Self.now() - storing
        if Task.isCancelled { return }
        var result = ImageLoadResult(image: produced.delivered, data: response.data, cacheType: .none, url: response.url,
                                     cacheKey: plan.key, statusCode: response.statusCode, metrics: response.metrics)
        result.finalURL = response.finalURL
        result.httpHeaders = response.cacheHeaders
        result.storeError = storeError
        timings.total = Self.now() - started
        result.timings = timings
        succeed(job, result)
    }

    /// Reports a decode's and a transform's durations.
    private func record(_ produced: Produced) {
        if let wait = produced.queueWait { metrics.queueWait.record(seconds: wait) }
        if let decode = produced.decodeDuration { metrics.decode.record(seconds: decode) }
        if let transform = produced.transformDuration { metrics.transform.record(seconds: transform) }
    }

    /// What a decode (and transform) made of some bytes.
    struct Produced: Sendable {
        /// The decode, before any transformer (nil with `.avoidDecodeImage`).
        var decoded: DecodedImage?
        /// What the caller gets: the transformed image, or the decode.
        var delivered: DecodedImage?
        var wasTransformed: Bool
        var queueWait: TimeInterval?
        var decodeDuration: TimeInterval?
        var transformDuration: TimeInterval?
    }

    /// Decodes `data` with the plan's options (unless `image` is given), then transforms
    /// (TRK-04: finished images only; animated ones only with `.transformAnimatedImage`).
    static func produce(from data: Data?, plan: ImageLoadPlan, image: DecodedImage?,
                        decoding: ImageDecodingOptions? = nil) throws(StagedError) -> Produced {
        if plan.options.contains(.avoidDecodeImage) && image == nil {
            return Produced(decoded: nil, delivered: nil, wasTransformed: false)
        }
        let decoded: DecodedImage
        let decodeStarted = now()
        var decodeDuration: TimeInterval?
        do throws(ImageError) {
            if let image {
                decoded = image
            } else if let data {
                decoded = try plan.coders.decode(data, options: decoding ?? plan.decoding)
                decodeDuration = now() - decodeStarted
            } else {
                throw ImageError(.emptyData, "there are no bytes to decode")
            }
        } catch {
            throw StagedError(error: error, stage: .decode)
        }
        guard let transformer = plan.transformer, !decoded.isAnimated || plan.options.contains(.transformAnimatedImage),
              !decoded.isPartial else {
            return Produced(decoded: decoded, delivered: decoded, wasTransformed: false, decodeDuration: decodeDuration)
        }
        do throws(ImageError) {
            let transformStarted = now()
            let transformed = try transformer.transform(decoded)
            return Produced(decoded: decoded, delivered: transformed, wasTransformed: true, decodeDuration: decodeDuration,
                            transformDuration: now() - transformStarted)
        } catch {
            throw StagedError(error: error, stage: .transform)
        }
    }

    /// A failure with the stage it happened in (for the failed-URL rule).
    struct StagedError: Error, Sendable {
        var error: ImageError
        var stage: FailureStage
    }

    /// MGR-10: a variant (transformer, thumbnail, decode setting) that missed is made from the
    /// original's cached bytes (or, for a transformer alone, its decoded image in memory). nil
    /// when the original is not cached or its bytes do not decode: the loader is asked then.
    private func variantFromOriginal(_ job: ImageLoadJob) async -> ImageLoadResult? {
        let plan = job.plan
        let original: ImageCacheQueryResult
        do {
            original = try await plan.cache.query(plan.key.original, cacheType: plan.context.originalQueryCacheType,
                                                  options: [.avoidDecodeImage, .skipMemoryPromotion, .queryMemoryData],
                                                  decoding: .default)
        } catch {
            return nil
        }
        // A decoded original serves only when the variant adds nothing but a transformer.
        let usable = plan.key.thumbnail == nil && plan.key.decodeVariant == nil
            && !plan.options.contains(.decodeFirstFrameOnly) ? original.image : nil
        guard usable != nil || original.data != nil, !Task.isCancelled else { return nil }
        let produced: Produced
        do {
            let queued = Self.now()
            produced = try await decodeQueue.run { () throws(ImageError) -> Produced in
                let dequeued = Self.now()
                do throws(StagedError) {
                    var produced = try Self.produce(from: original.data, plan: plan, image: usable)
                    produced.queueWait = dequeued - queued
                    return produced
                } catch {
                    throw error.error
                }
            }
        } catch {
            return nil
        }
        if Task.isCancelled { return nil }
        record(produced)
        let storing = Self.now()
        let storeError = await storeVariant(produced, originalData: original.data, http: original.metadata?.http, plan: plan)
        var result = ImageLoadResult(image: produced.delivered, data: original.data,
                                     cacheType: original.cacheType == .memory ? .memory : .disk, url: plan.url, cacheKey: plan.key)
        result.httpHeaders = original.metadata?.http
        result.storeError = storeError
        result.timings.queueWait = produced.queueWait
        result.timings.decode = produced.decodeDuration
        result.timings.transform = produced.transformDuration
        result.timings.store = Self.now() - storing
        return result
    }

    // MARK: Loader

    /// What the loader delivered: the whole response, or (``ImageLoadOptions/thumbnailFromFirstScans``)
    /// a progressive JPEG's bytes up to its DC scans, the transfer cancelled.
    struct LoadOutcome: Sendable {
        var response: ImageLoadResponse
        var isFirstScansOnly = false
    }

    /// Runs the loader for `job`: progress to the callers that asked, previews from the bytes so
    /// far when a caller wants them (`progressive`), an early finish when the thumbnail needs
    /// only the first scans; cancellable through the job.
    private func load(_ request: ImageLoadRequest, for job: ImageLoadJob, progressive: Bool) async -> Result<LoadOutcome, ImageError> {
        let plan = job.plan
        let early = plan.options.contains(.thumbnailFromFirstScans) && plan.decoding.thumbnailPixelSize != nil
            && !plan.options.contains(.avoidDecodeImage) ? FirstScansWatch() : nil
        // The continuation is resumed once: by the loader, or by an early finish before it.
        let resumed = Locked(false)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<LoadOutcome, ImageError>, Never>) in
                let resume = { @Sendable (result: Result<LoadOutcome, ImageError>) in
                    let first = resumed.withLock { done -> Bool in
                        defer { done = true }
                        return !done
                    }
                    if first { continuation.resume(returning: result) }
                }
                var progress: (@Sendable (ImageLoadProgress) -> Void)?
                if job.wantsProgress || early != nil {
                    let wantsProgress = job.wantsProgress
                    progress = { [weak self, weak job] update in
                        guard let self, let job else { return }
                        if wantsProgress {
                            job.send(.progress(update))
                            if progressive { self.preview(job) }
                        }
                        if let early, let token = job.loaderToken, early.shouldLook(at: update.receivedBytes),
                           let data = token.receivedData() {
                            // The registered decoder for the bytes says whether they are enough
                            // (the signature needs its first 16 bytes).
                            let verdict: ImagePrefixVerdict = data.count < 16 ? .pending
                                : plan.coders.decoder(for: ImageSignature(data), as: (any EarlyFinishImageDecoding).self)?
                                    .prefixVerdict(data, options: plan.decoding) ?? .never
                            if verdict != .pending { early.stop() } // decided: no more looks (and copies)
                            guard case .ready(let end) = verdict else { return }
                            var metrics = TransferMetrics()
                            metrics.bytesReceived = Int64(data.count)
                            let response = ImageLoadResponse(url: request.url, data: data.prefix(end), metrics: metrics)
                            resume(.success(LoadOutcome(response: response, isFirstScansOnly: true)))
                            token.cancel()
                        }
                    }
                }
                let token = plan.loader.load(request, progress: progress) { result in
                    resume(result.map { LoadOutcome(response: $0) })
                }
                job.setLoaderToken(token)
                if Task.isCancelled { token.cancel() }
            }
        } onCancel: {
            job.loaderToken?.cancel()
        }
    }

    /// Decodes a preview of the bytes received so far on the decode threads, at most one at a
    /// time and one per ``previewInterval``.
    private func preview(_ job: ImageLoadJob) {
        let now = Date().timeIntervalSinceReferenceDate
        guard let decoder = job.reservePreview(now: now, interval: Self.previewInterval) else { return }
        guard let data = job.loaderToken?.receivedData(), !data.isEmpty else {
            job.deliverPreview(nil)
            return
        }
        _ = decodeQueue.submit({ () throws(ImageError) -> DecodedImage? in
            decoder.update(data, isFinal: false)
            return decoder.preview()
        }, completion: { result in
            job.deliverPreview(try? result.get())
        })
    }

    // MARK: Endings

    private func succeed(_ job: ImageLoadJob, _ result: ImageLoadResult) {
        switch result.cacheType {
        case .memory: metrics.memoryHits.increment()
        case .disk: metrics.diskHits.increment()
        default: (result.statusCode != nil ? metrics.networkLoads : metrics.emptyLoads).increment()
        }
        if job.plan.options.contains(.retryFailed) { failedURLs.remove(job.plan.failedURLKey) }
        job.finish(.success(result))
    }

    /// MGR-14: report the failure; put the URL on the failed list when the failure is permanent.
    private func fail(_ job: ImageLoadJob, _ error: ImageError, at stage: FailureStage) {
        let url = job.plan.url
        let blocks = configuration.shouldBlockFailedURL?(url, error) ?? Self.blocksURL(after: error, at: stage)
        if blocks { failedURLs.insert(job.plan.failedURLKey) }
        if error.code == .cancelled { metrics.cancelledLoads.increment() } else { metrics.failedLoads.increment() }
        metrics.count(error)
        if logger.logLevel <= .debug {
            logger.debug("load failed", metadata: ["imagekit.url": "\(job.plan.urlString)", "imagekit.error": "\(error)",
                                                   "imagekit.blocks_url": "\(blocks)"])
        }
        job.finish(.failure(error))
    }
}

/// When to look for a progressive JPEG's first scans in the bytes received so far: each look
/// copies them, so looks are spaced by an eighth of what has arrived (at least 16 KiB), and none
/// follow a finish or a file that cannot finish early.
final class FirstScansWatch: Sendable {
    private let state = Locked((nextLook: Int64(0), stopped: false))

    func shouldLook(at received: Int64) -> Bool {
        state.withLock { state in
            guard !state.stopped, received >= state.nextLook else { return false }
            state.nextLook = received + max(16 << 10, received / 8)
            return true
        }
    }

    func stop() { state.withLock { $0.stopped = true } }
}
