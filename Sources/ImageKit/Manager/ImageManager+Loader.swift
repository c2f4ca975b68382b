import Foundation

// The loader run for a job (progress, previews, an early finish at the first scans) and how a job ends.
extension ImageManager {
    /// What the loader delivered: the whole response, or (``ImageLoadOptions/thumbnailFromFirstScans``)
    /// a progressive JPEG's bytes up to its DC scans, the transfer cancelled.
    struct LoadOutcome: Sendable {
        var response: ImageLoadResponse
        var isFirstScansOnly = false
    }

    /// Runs the loader for `job`: progress to the callers that asked, previews from the bytes so
    /// far when a caller wants them (`progressive`), an early finish when the thumbnail needs
    /// only the first scans; cancellable through the job.
    func load(_ request: ImageLoadRequest, for job: ImageLoadJob, progressive: Bool) async -> Result<
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
    func preview(_ job: ImageLoadJob) {
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

    func succeed(_ job: ImageLoadJob, _ result: ImageLoadResult) {
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
    func fail(_ job: ImageLoadJob, _ error: ImageError, at stage: FailureStage) {
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
