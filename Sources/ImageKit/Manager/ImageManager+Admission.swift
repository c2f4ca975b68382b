import Foundation
import Logging

/// The gate of every load: a memory hit answered before a plan is built, the synchronous answer a
/// cache can give, the URL check, and joining the job for the key (or starting one).
extension ImageManager {
    /// How a load starts: answered at once (a memory hit, a synchronous disk hit, a cache-only
    /// miss), or with the plan of its asynchronous part.
    enum Admission {
        case answered(ImageLoadResult)
        case load(ImageLoadPlan)
    }

    // Spec: MGR-03, MGR-24.
    /// A URL that is missing or empty → `invalidURL`; a URL on the failed list →
    /// `blacklisted` (unless `.retryFailed`). Then memory, synchronously, and the
    /// scheme check (a URL whose image is in memory was loaded before).
    /// - Parameter memoryMissed: ``memoryHit(_:options:context:missed:)`` asked memory for this
    ///   load's plain key and had nothing: it is not asked again.
    func admit(
        _ url: URL?, options: ImageLoadOptions, context: ImageLoadContext, memoryMissed alreadyMissed: Bool = false
    ) -> Result<Admission, ImageError> {
        guard let url else { return .failure(ImageError(.invalidURL, "the image URL is nil")) }
        let urlString = url.absoluteString
        guard !urlString.isEmpty else { return .failure(ImageError(.invalidURL, "the image URL is empty")) }
        let failedKey = FailedURLList.key(urlString, requestHeaders: context.requestHeaders)
        if !options.contains(.retryFailed), failedURLs.contains(failedKey) {
            return .failure(ImageError(.blacklisted, "\(urlString) failed before and is on the failed-URL list"))
        }
        // A plain miss asks memory once here; the synchronous answer then skips what it would ask again.
        var memoryMissed = alreadyMissed
        if !alreadyMissed,
            let hit = plainMemoryHit(
                url, urlString: urlString, options: options, context: context, missed: &memoryMissed)
        {
            return .success(.answered(hit))
        }
        let plan = resolve(url, urlString: urlString, options: options, context: context)
        if let answer = synchronousAnswer(plan, memoryMissed: memoryMissed) { return .success(.answered(answer)) }
        if let error = loadableError(plan) { return .failure(error) }
        return .success(.load(plan))
    }

    /// The commonest load answered before anything else is built: a plain memory hit (see
    /// `plainMemoryHit`) of a URL not on the failed-URL list, returned as is rather than
    /// wrapped in an ``Admission`` and unwrapped again (a fifth of a hit's time). nil:
    /// ``admit(_:options:context:memoryMissed:)`` decides, as for any load; `missed` turns true
    /// when memory was asked for the plain key and had nothing.
    func memoryHit(_ url: URL, options: ImageLoadOptions, context: ImageLoadContext, missed: inout Bool)
        -> ImageLoadResult?
    {
        let urlString = url.absoluteString
        guard !urlString.isEmpty,
            options.contains(.retryFailed)
                || !failedURLs.contains(FailedURLList.key(urlString, requestHeaders: context.requestHeaders))
        else { return nil }
        return plainMemoryHit(url, urlString: urlString, options: options, context: context, missed: &missed)
    }

    /// The commonest load, answered before a plan is built: the original image, in memory, with
    /// no setting that changes its key or the query (no processor, filter, transformer,
    /// thumbnail, scale-down, kept orientation, or option that bypasses or extends memory).
    /// `missed` turns true when memory was asked for the plan's own key and had nothing.
    private func plainMemoryHit(
        _ url: URL, urlString: String, options: ImageLoadOptions, context: ImageLoadContext,
        missed: inout Bool
    ) -> ImageLoadResult? {
        guard optionsProcessor == nil, cacheKeyFilter == nil, transformer == nil, context.cacheKeyFilter == nil,
            context.transformer == nil, context.thumbnailPixelSize == nil, context.queryCacheType.includesMemory,
            context.requestHeaders.isEmpty, !Self.isFileURLString(urlString),
            context.decodingOptions?.appliesOrientation ?? true,
            options.isDisjoint(with: [
                .scaleDownLargeImages, .fromLoaderOnly, .refreshCached, .queryMemoryData, .decodeFirstFrameOnly,
                .preloadAllFrames,
            ])
        else { return nil }
        let key = CacheKey(urlString)
        guard let image = (context.imageCache ?? cache).imageFromMemory(forKey: key) else {
            missed = true
            return nil
        }
        metrics.memoryHits.increment()
        if options.contains(.retryFailed) { failedURLs.remove(urlString) }
        return ImageLoadResult(image: image, data: nil, cacheType: .memory, url: url, cacheKey: key)
    }

    /// `file:` URLs are keyed by the file's version, never by the plain string (a byte compare:
    /// `URL.isFileURL` costs a fifth of a memory hit).
    static func isFileURLString(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { bytes in
            bytes.count >= 5 && bytes[0] | 0x20 == UInt8(ascii: "f") && bytes[1] | 0x20 == UInt8(ascii: "i")
                && bytes[2] | 0x20 == UInt8(ascii: "l") && bytes[3] | 0x20 == UInt8(ascii: "e")
                && bytes[4] == UInt8(ascii: ":")
        }
    }

    /// The rest of the URL check, after memory answered nothing (a URL whose image is in
    /// memory was loaded before): a scheme no loader handles → `invalidURL`.
    func loadableError(_ plan: ImageLoadPlan) -> ImageError? {
        guard !plan.loader.canLoad(plan.url), !plan.options.contains(.fromCacheOnly) else { return nil }
        return ImageError(.invalidURL, "no loader handles \(plan.urlString)")
    }

    // Spec: MGR-24.
    /// The answer a cache can give without waiting: a memory hit, or a disk hit with
    /// ``ImageLoadOptions/queryDiskDataSync``. nil: the load goes on asynchronously.
    /// - Parameter memoryMissed: memory was just asked for this plan's key (the plain path) and had
    ///   nothing: it is not asked again, and the cache's synchronous query is skipped unless it
    ///   could answer from disk (`queryDiskDataSync`) or decide a memory-only query.
    func synchronousAnswer(_ plan: ImageLoadPlan, memoryMissed: Bool = false) -> ImageLoadResult? {
        guard plan.queriesCache, !plan.options.contains(.refreshCached) else { return nil }
        if memoryMissed, plan.context.queryCacheType != .memory, !plan.cacheQueryOptions.contains(.queryDiskDataSync) {
            return nil
        }
        // The common case first: a plain memory lookup.
        if !memoryMissed, plan.context.queryCacheType.includesMemory,
            plan.cacheQueryOptions.isDisjoint(with: [.queryMemoryData, .decodeFirstFrameOnly]),
            let image = plan.cache.imageFromMemory(forKey: plan.key)
        {
            metrics.memoryHits.increment()
            if plan.options.contains(.retryFailed) { failedURLs.remove(plan.failedURLKey) }
            return ImageLoadResult(
                image: plan.delivering(image), data: nil, cacheType: .memory, url: plan.url, cacheKey: plan.key)
        }
        guard
            let answer = plan.cache.querySynchronously(
                plan.key, cacheType: plan.context.queryCacheType,
                options: plan.cacheQueryOptions, decoding: plan.decoding),
            case .success(let hit) = answer
        else { return nil }
        if plan.isHit(hit) {
            if plan.options.contains(.revalidateStaleEntries), let metadata = hit.metadata,
                !metadata.isFresh(at: Date())
            {
                return nil
            }
            if plan.options.contains(.retryFailed) { failedURLs.remove(plan.failedURLKey) }
            (hit.cacheType == .memory ? metrics.memoryHits : metrics.diskHits).increment()
            return plan.result(from: hit)
        }
        // A definite miss of every layer asked for, and the loader may not be used.
        if plan.options.contains(.fromCacheOnly) && !plan.queriesOriginal {
            return plan.emptyResult()
        }
        return nil
    }

    /// Registers a caller and attaches it to the job for its image, starting one if none runs.
    func subscribe(
        _ plan: ImageLoadPlan, wantsProgress: Bool, wantsPreviews: Bool, endsAtFirstResult: Bool = false,
        sink: @escaping @Sendable (ImageLoadTask.Event) -> Void
    ) -> ImageLoadTask {
        let jobKey = plan.makeJobKey()
        let id = state.withLock { state -> Int in
            state.sequence += 1
            return state.sequence
        }
        let task = ImageLoadTask(
            id: id, wantsProgress: wantsProgress, wantsPreviews: wantsPreviews,
            endsAtFirstResult: endsAtFirstResult, priority: plan.priority, sink: sink
        ) { [weak self] task, cancelled in
            self?.ended(task, cancelled: cancelled, jobKey: jobKey)
        }
        let newJob = state.withLock { state -> ImageLoadJob? in
            state.running[id] = task
            if let job = state.jobs[jobKey], job.add(task) { return nil }
            let job = ImageLoadJob(plan: plan)
            _ = job.add(task)
            state.jobs[jobKey] = job
            return job
        }
        if let newJob {
            let work = Task.immediate(priority: plan.options.contains(.lowPriority) ? .utility : .userInitiated) {
                [self] in
                await run(newJob)
                state.withLock { state in
                    if state.jobs[jobKey] === newJob { state.jobs[jobKey] = nil }
                }
            }
            newJob.start(work)
        }
        return task
    }

    /// A caller ended: it leaves the running set and its job; the last cancelled caller of a
    /// job stops the job.
    private func ended(_ task: ImageLoadTask, cancelled: Bool, jobKey: String) {
        let job = state.withLock { state -> ImageLoadJob? in
            state.running[task.id] = nil
            return state.jobs[jobKey]
        }
        guard let job, job.remove(task, cancelled: cancelled) else { return }
        state.withLock { state in
            if state.jobs[jobKey] === job { state.jobs[jobKey] = nil }
        }
        metrics.cancelledLoads.increment()
        job.stop()
    }
}
