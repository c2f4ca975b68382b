import Foundation
import Logging
import Tracing

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
    /// Each stage that runs is a span under `imagekit.load` (``ImageKitTracing``); the spans
    /// still open end as the callers are answered (``ImageLoadJob/finish(_:)``).
    func run(_ job: ImageLoadJob) async {
        await stage("imagekit.load", of: job) { span in
            if span.isRecording { span.attributes["url.full"] = ImageKitTracing.spanURL(job.plan.url) }
            var flow = FlowRun(job: job, started: Self.now(), logger: jobLogger(job))
            let cached = await stage("imagekit.cache.query", of: job) { span in
                let cached = await queryCaches(&flow)
                if span.isRecording {
                    span.attributes["imagekit.cache.hit"] = cached.map { "\($0.cacheType)" } ?? "none"
                }
                return cached
            }
            if Task.isCancelled { return }
            guard let revalidating = await answerFromCache(cached, &flow) else { return }
            guard
                let (response, decoding) = await stage(
                    "imagekit.download", of: job,
                    { _ in await download(revalidating: revalidating ? cached : nil, &flow) })
            else { return }
            guard
                let produced = await stage(
                    "imagekit.decode", of: job, { _ in await decodeAndTransform(response, decoding: decoding, &flow) })
            else { return }
            guard
                let storeError = await stage(
                    "imagekit.cache.store", of: job,
                    { _ in await store(produced, from: response, decoding: decoding, &flow) })
            else { return }
            deliver(produced, from: response, storeError: storeError, &flow)
        }
    }

    /// Runs `body` in a span named `name`, child of the current one, kept open under `job`:
    /// ended when `body` returns, or before the callers are answered if that comes first.
    func stage<Value>(
        _ name: String, of job: ImageLoadJob, isolation: isolated (any Actor)? = #isolation,
        _ body: (any Span) async -> Value
    ) async -> Value {
        let span = InstrumentationSystem.tracer.startSpan(name, context: ServiceContext.current ?? .topLevel)
        // A span that records nothing (no tracer, or sampled out) has no order of ending to keep.
        guard span.isRecording else {
            defer { span.end() }
            return await ServiceContext.$current.withValue(
                span.context, operation: { await body(span) }, isolation: isolation)
        }
        let depth = job.openSpan(span)
        defer { job.closeSpans(from: depth) }
        return await ServiceContext.$current.withValue(
            span.context, operation: { await body(span) }, isolation: isolation)
    }

    func jobLogger(_ job: ImageLoadJob) -> Logger {
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
    func queryCaches(_ flow: inout FlowRun) async -> ImageCacheQueryResult? {
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
    func answerFromCache(_ cached: ImageCacheQueryResult?, _ flow: inout FlowRun) async -> Bool? {
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
    func download(revalidating: ImageCacheQueryResult?, _ flow: inout FlowRun) async -> (
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
    func decodeAndTransform(
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
    func store(
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
    func deliver(
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
    func record(_ produced: Produced) {
        if let wait = produced.queueWait { metrics.queueWait.record(seconds: wait) }
        if let decode = produced.decodeDuration { metrics.decode.record(seconds: decode) }
        if let transform = produced.transformDuration { metrics.transform.record(seconds: transform) }
    }
}
