import Foundation
import Logging
import Tracing

// Spec: DESIGN §5, steps 6–10.
/// The load flow of one job: disk, original-cache fallback, loader,
/// decode, transform, store. Every `await` is a point where the job may have been stopped by
/// its last caller; then nothing more is delivered or stored.
extension ImageManager {
    /// Minimum time between two previews of one load.
    static let previewInterval = 0.1

    /// Seconds on the monotonic clock.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// One job's way through the stages: what every stage reads and adds to.
    struct FlowRun {
        let job: ImageLoadJob
        var plan: ImageLoadPlan { job.plan }
        let started: Double
        var timings = ImageLoadTimings()
        var logger: Logger
    }

    /// The flow as its table of contents (SDWebImage's stage chain): each stage either hands
    /// the next what it needs or has ended the job (answered, failed, or stopped because the last
    /// caller left) and returns nil.
    /// Each stage that runs is a span under `imagekit.load` (``ImageKitTracing``).
    func run(_ job: ImageLoadJob) async {
        await withSpan("imagekit.load") { span in
            span.attributes["url.full"] = ImageKitTracing.spanURL(job.plan.url)
            var flow = FlowRun(job: job, started: Self.now(), logger: jobLogger(job))
            let cached = await withSpan("imagekit.cache.query") { span in
                let cached = await queryCaches(&flow)
                span.attributes["imagekit.cache.hit"] = cached.map { "\($0.cacheType)" } ?? "none"
                return cached
            }
            if Task.isCancelled { return }
            guard let revalidating = await answerFromCache(cached, &flow) else { return }
            guard
                let (response, decoding) = await withSpan(
                    "imagekit.download", { _ in await download(revalidating: revalidating ? cached : nil, &flow) })
            else { return }
            guard
                let produced = await withSpan(
                    "imagekit.decode", { _ in await decodeAndTransform(response, decoding: decoding, &flow) })
            else { return }
            guard
                let storeError = await withSpan(
                    "imagekit.cache.store", { _ in await store(produced, from: response, decoding: decoding, &flow) })
            else { return }
            deliver(produced, from: response, storeError: storeError, &flow)
        }
    }

    private func jobLogger(_ job: ImageLoadJob) -> Logger {
        var logger = self.logger
        if logger.logLevel <= .debug {
            logger[metadataKey: "imagekit.url"] = "\(job.plan.urlString)"
            logger[metadataKey: "imagekit.cache_key"] = "\(job.plan.key)"
            logger[metadataKey: "imagekit.job"] = "\(UInt(bitPattern: ObjectIdentifier(job).hashValue) & 0xFFFFFF)"
        }
        return logger
    }

    /// Stage 1: the caches — memory again (a load that finished meanwhile), then disk. An
    /// unreadable cache is a miss.
    private func queryCaches(_ flow: inout FlowRun) async -> ImageCacheQueryResult? {
        let plan = flow.plan
        guard plan.queriesCache else { return nil }
        var cached: ImageCacheQueryResult?
        do {
            let hit = try await plan.cache.query(
                plan.key, cacheType: plan.context.queryCacheType,
                options: plan.cacheQueryOptions, decoding: plan.decoding)
            if plan.isHit(hit) { cached = hit }
        } catch {
            flow.logger.debug("cache query failed", metadata: ["imagekit.error": "\(error)"])
        }
        flow.timings.cacheQuery = Self.now() - flow.started
        flow.logger.debug("cache queried", metadata: ["imagekit.hit": "\(cached.map { "\($0.cacheType)" } ?? "none")"])
        return cached
    }

    /// Stage 2: a cached image answers (then a revalidation may follow: true), or a variant is
    /// made from the cached original; false: nothing cached, go on to the download.
    private func answerFromCache(_ cached: ImageCacheQueryResult?, _ flow: inout FlowRun) async -> Bool? {
        let (plan, job) = (flow.plan, flow.job)
        if let cached {
            let stale =
                plan.options.contains(.revalidateStaleEntries) && !(cached.metadata?.isFresh(at: Date()) ?? true)
            let revalidates =
                (plan.options.contains(.refreshCached) || stale) && !plan.options.contains(.fromCacheOnly)
                && plan.loader.canLoad(plan.url) && (configuration.shouldDownload?(plan.url) ?? true)
            var result = plan.result(from: cached)
            result.timings = flow.timings
            result.timings.total = Self.now() - flow.started
            guard revalidates else {
                succeed(job, result)
                return nil
            }
            // MGR-12: the cached image first, then the revalidation.
            job.deliverIntermediate(result)
            return Task.isCancelled ? nil : true
        }
        if plan.queriesOriginal, var result = await variantFromOriginal(job) {
            result.timings.cacheQuery = flow.timings.cacheQuery
            result.timings.total = Self.now() - flow.started
            flow.logger.debug("variant made from the cached original")
            succeed(job, result)
            return nil
        }
        return Task.isCancelled ? nil : false
    }

    // Spec: MGR-11.
    /// Stage 3: the download decision and the transfer — a revalidation of `revalidating`
    /// with its validators, or the first scans alone when the thumbnail needs no more. A 304
    /// refreshes the cached metadata and ends the job.
    private func download(revalidating: ImageCacheQueryResult?, _ flow: inout FlowRun) async -> (
        ImageLoadResponse, ImageDecodingOptions
    )? {
        let (plan, job) = (flow.plan, flow.job)
        guard !plan.options.contains(.fromCacheOnly), configuration.shouldDownload?(plan.url) ?? true else {
            job.finish(revalidating == nil ? .success(plan.emptyResult()) : nil)
            return nil
        }
        var request = ImageLoadRequest(
            url: plan.url, priority: job.priority, headers: plan.context.requestHeaders,
            retryPolicy: plan.context.retryPolicy, hooks: plan.context.loadHooks)
        if let http = revalidating?.metadata?.http, http.etag != nil || http.lastModified != nil {
            request.cachedValidators = http
        }
        if plan.options.contains(.allowInvalidSSLCertificates) { request.allowsInvalidSSLCertificates = true }
        if plan.options.contains(.handleCookies) { request.handlesCookies = true }

        var decoding = plan.decoding
        let downloadStarted = Self.now()
        flow.logger.debug("loading", metadata: ["imagekit.priority": "\(request.priority)"])
        let loaded = await load(request, for: job, progressive: revalidating == nil)
        flow.timings.download = Self.now() - downloadStarted
        let response: ImageLoadResponse
        switch loaded {
        case .success(let loaded):
            response = loaded.response
            decoding.stopsAfterDCScans = loaded.isFirstScansOnly
        case .failure(let error):
            if !Task.isCancelled { fail(job, error, at: .load) }
            return nil
        }
        if Task.isCancelled { return nil }
        if response.isNotModified {
            let http = response.cacheHeaders
            _ = await plan.cache.refreshMetadata(forKey: plan.key, http: http)
            if !plan.key.isOriginal { _ = await plan.cache.refreshMetadata(forKey: plan.key.original, http: http) }
            job.send(.notModified(response.metrics))
            job.finish(nil)
            return nil
        }
        return (response, decoding)
    }

    /// Stage 4: decode and transform on the decode queue, off the caller and the network threads.
    private func decodeAndTransform(
        _ response: ImageLoadResponse, decoding: ImageDecodingOptions, _ flow: inout FlowRun
    ) async -> Produced? {
        let (plan, job) = (flow.plan, flow.job)
        job.beginFinalizing()
        let staged: Result<Produced, StagedError>
        let queued = Self.now()
        do {
            staged = try await decodeQueue.run { () throws(ImageError) -> Result<Produced, StagedError> in
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
            if !Task.isCancelled { fail(job, error, at: .transform) }
            return nil
        }
        let produced: Produced
        switch staged {
        case .success(let value):
            produced = value
        case .failure(let failure):
            // Bytes cut after the first scans are not the URL's bytes: their failure is not its.
            if !Task.isCancelled {
                fail(job, failure.error, at: decoding.stopsAfterDCScans ? .transform : failure.stage)
            }
            return nil
        }
        flow.timings.queueWait = produced.queueWait
        flow.timings.decode = produced.decodeDuration
        flow.timings.transform = produced.transformDuration
        record(produced)
        flow.logger.debug("decoded", metadata: ["imagekit.decode_seconds": "\(produced.decodeDuration ?? 0)"])
        return Task.isCancelled ? nil : produced
    }

    /// Stage 5: store. Bytes cut after the first scans are no original: only the thumbnail made
    /// from them is kept. Returns the store's error (nil inside: stored), or nil when the job
    /// was stopped meanwhile.
    private func store(
        _ produced: Produced, from response: ImageLoadResponse, decoding: ImageDecodingOptions,
        _ flow: inout FlowRun
    ) async -> ImageError?? {
        let plan = flow.plan
        let storing = Self.now()
        let storeError =
            decoding.stopsAfterDCScans
            ? await storeVariant(produced, originalData: nil, http: response.cacheHeaders, plan: plan)
            : await store(produced, data: response.data, http: response.cacheHeaders, plan: plan)
        flow.timings.store = Self.now() - storing
        return Task.isCancelled ? nil : .some(storeError)
    }

    /// Stage 6: deliver the result to every caller.
    private func deliver(
        _ produced: Produced, from response: ImageLoadResponse, storeError: ImageError?, _ flow: inout FlowRun
    ) {
        let plan = flow.plan
        var result = ImageLoadResult(
            image: produced.delivered, data: response.data, cacheType: .none, url: response.url,
            cacheKey: plan.key, statusCode: response.statusCode, metrics: response.metrics,
            format: produced.signature?.format)
        result.finalURL = response.finalURL
        result.httpHeaders = response.cacheHeaders
        result.storeError = storeError
        flow.timings.total = Self.now() - flow.started
        result.timings = flow.timings
        succeed(flow.job, result)
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
        /// The bytes' format, sniffed once here for the whole load: the decode, the store's
        /// whole-image check and the result's format all read it (nil without bytes).
        var signature: ImageSignature?
        var queueWait: TimeInterval?
        var decodeDuration: TimeInterval?
        var transformDuration: TimeInterval?
    }

    // Spec: TRK-04.
    /// Decodes `data` with the plan's options (unless `image` is given), then transforms
    /// (finished images only; animated ones only with `.transformAnimatedImage`).
    static func produce(
        from data: Data?, plan: ImageLoadPlan, image: DecodedImage?,
        decoding: ImageDecodingOptions? = nil
    ) throws(StagedError) -> Produced {
        let signature = data.map { ImageSignature($0) }
        if plan.options.contains(.avoidDecodeImage) && image == nil {
            return Produced(decoded: nil, delivered: nil, wasTransformed: false, signature: signature)
        }
        let decoded: DecodedImage
        let decodeStarted = now()
        var decodeDuration: TimeInterval?
        do throws(ImageError) {
            if let image {
                decoded = image
            } else if let data, let signature {
                decoded = try plan.coders.decode(data, signature: signature, options: decoding ?? plan.decoding)
                decodeDuration = now() - decodeStarted
            } else {
                throw ImageError(.emptyData, "there are no bytes to decode")
            }
        } catch {
            throw StagedError(error: error, stage: .decode)
        }
        guard let transformer = plan.transformer, !decoded.isAnimated || plan.options.contains(.transformAnimatedImage),
            !decoded.isPartial
        else {
            return Produced(
                decoded: decoded, delivered: decoded, wasTransformed: false, signature: signature,
                decodeDuration: decodeDuration)
        }
        do throws(ImageError) {
            let transformStarted = now()
            let transformed = try transformer.transform(decoded)
            return Produced(
                decoded: decoded, delivered: transformed, wasTransformed: true, signature: signature,
                decodeDuration: decodeDuration,
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

    // Spec: MGR-10.
    /// A variant (transformer, thumbnail, decode setting) that missed is made from the
    /// original's cached bytes (or, for a transformer alone, its decoded image in memory). nil
    /// when the original is not cached or its bytes do not decode: the loader is asked then.
    private func variantFromOriginal(_ job: ImageLoadJob) async -> ImageLoadResult? {
        let plan = job.plan
        let original: ImageCacheQueryResult
        do {
            original = try await plan.cache.query(
                plan.key.original, cacheType: plan.context.originalQueryCacheType,
                options: [.avoidDecodeImage, .skipMemoryPromotion, .queryMemoryData],
                decoding: .default)
        } catch {
            return nil
        }
        // A decoded original serves only when the variant adds nothing but a transformer.
        let usable =
            plan.key.thumbnail == nil && plan.key.decodeVariant == nil
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
        let storeError = await storeVariant(
            produced, originalData: original.data, http: original.metadata?.http, plan: plan)
        var result = ImageLoadResult(
            image: produced.delivered, data: original.data,
            cacheType: original.cacheType == .memory ? .memory : .disk, url: plan.url, cacheKey: plan.key,
            format: produced.signature?.format)
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
    private func load(_ request: ImageLoadRequest, for job: ImageLoadJob, progressive: Bool) async -> Result<
        LoadOutcome, ImageError
    > {
        let plan = job.plan
        let early =
            plan.options.contains(.thumbnailFromFirstScans) && plan.decoding.thumbnailPixelSize != nil
                && !plan.options.contains(.avoidDecodeImage) ? FirstScansWatch() : nil
        let previews = progressive && job.wantsProgress
        let request = {
            // The bytes come with the progress only for a load that decodes them while they arrive.
            var request = request
            request.deliversReceivedBytes = previews || early != nil
            return request
        }()
        // The continuation is resumed once: by the loader, or by an early finish before it.
        let resumed = Locked(false)
        return await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<LoadOutcome, ImageError>, Never>) in
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
                        let data = update.newBytes != nil ? job.receive(update.newBytes) : Data()
                        if wantsProgress {
                            var told = update
                            told.newBytes = nil  // the callers asked for progress, not for the bytes
                            job.send(.progress(told))
                            if previews { self.preview(job) }
                        }
                        if let early, let token = job.loaderToken, early.shouldLook(at: update.receivedBytes) {
                            // The registered decoder for the bytes says whether they are enough
                            // (the signature needs its first 16 bytes).
                            let verdict: ImagePrefixVerdict =
                                data.count < 16
                                ? .pending
                                : plan.coders.decoder(
                                    for: ImageSignature(data), as: (any EarlyFinishImageDecoding).self)?
                                    .prefixVerdict(data, options: plan.decoding) ?? .never
                            if verdict != .pending { early.stop() }  // decided: no more looks
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
        let data = job.receive(nil)
        guard !data.isEmpty else {
            job.deliverPreview(nil)
            return
        }
        _ = decodeQueue.submit(
            { () throws(ImageError) -> DecodedImage? in
                decoder.update(data, isFinal: false)
                return decoder.preview()
            },
            completion: { result in
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

    // Spec: MGR-14.
    /// Report the failure; put the URL on the failed list when the failure is permanent.
    private func fail(_ job: ImageLoadJob, _ error: ImageError, at stage: FailureStage) {
        let url = job.plan.url
        let blocks = configuration.shouldBlockFailedURL?(url, error) ?? Self.blocksURL(after: error, at: stage)
        if blocks { failedURLs.insert(job.plan.failedURLKey) }
        if error.code == .cancelled { metrics.cancelledLoads.increment() } else { metrics.failedLoads.increment() }
        metrics.count(error)
        if logger.logLevel <= .debug {
            logger.debug(
                "load failed",
                metadata: [
                    "imagekit.url": "\(job.plan.urlString)", "imagekit.error": "\(error)",
                    "imagekit.blocks_url": "\(blocks)",
                ])
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
