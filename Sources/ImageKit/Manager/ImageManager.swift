import Foundation
import Logging

/// Loads images by URL: memory cache, joined loads, disk cache, loader, decode, transform,
/// store (SDWebImage's `SDWebImageManager`).
///
/// One call does it all. A memory hit answers before the call returns; identical loads in
/// flight share one job (one cache query, one transfer, one decode), each caller with its own
/// progress and exactly one completion; a variant (transformed, thumbnail) that is not cached
/// is made from the original's bytes on disk when they are there, without a request; what
/// comes from the loader is decoded on a bounded set of threads, transformed, then stored —
/// the variant under its own key, the original bytes under the URL's key.
///
/// ```swift
/// let manager = ImageManager.shared
/// let result = try await manager.loadImage(URL(string: "https://example.com/cat.jpg")!,
///                                          context: .init(thumbnailPixelSize: PixelSize(256)))
/// print(result.image?.width ?? 0, result.cacheType)
///
/// // Completion-handler form, cancellable:
/// let task = manager.loadImage(with: url) { result in … }
/// task.cancel()
/// ```
public final class ImageManager: Sendable {
    /// The cache every load uses unless its context names another.
    public let cache: any ImageCaching
    /// The loader every load uses unless its context names another.
    public let loader: any ImageLoading
    /// The coders loads decode and encode with.
    public let coders: ImageCodersManager
    /// The transformer applied to loads that name none in their context.
    public let transformer: (any ImageTransforming)?
    /// Turns a URL into its cache key string; nil uses the URL.
    public let cacheKeyFilter: CacheKeyFilter?
    /// Decides the bytes written to disk; nil writes the downloaded bytes.
    public let cacheSerializer: ImageCacheSerializer?
    /// Rewrites every load's options and context before it starts.
    public let optionsProcessor: ImageLoadOptionsProcessor?
    /// The configuration the manager was made with.
    public let configuration: ImageManagerConfiguration

    let failedURLs: FailedURLList
    let decodeQueue: BlockingQueue
    let metrics: ImageKitMetrics
    let logger: Logger
    /// Failed stores are logged at most once every 10 s (a full disk fails every store).
    let storeWarnings = RateLimit(interval: 10)
    let state = Locked(State())

    struct State {
        var jobs: [String: ImageLoadJob] = [:]
        var running: [Int: ImageLoadTask] = [:]
        var sequence = 0
    }

    /// The process-wide manager: ``ImageCache`` in the default namespace (memory plus
    /// `~/.cache/ImageKit/default`), the curl downloader with file and data-URL loaders.
    public static let shared = ImageManager()

    /// A manager over the given components. Every parameter has SDWebImage's default.
    public init(
        cache: (any ImageCaching)? = nil, loader: (any ImageLoading)? = nil,
        coders: ImageCodersManager = .shared, transformer: (any ImageTransforming)? = nil,
        cacheKeyFilter: CacheKeyFilter? = nil, cacheSerializer: ImageCacheSerializer? = nil,
        optionsProcessor: ImageLoadOptionsProcessor? = nil,
        configuration: ImageManagerConfiguration = ImageManagerConfiguration()
    ) {
        self.cache = cache ?? ImageManager.defaultCache(telemetry: configuration.telemetry)
        var downloads = ImageDownloaderConfiguration()
        downloads.telemetry = configuration.telemetry
        self.loader =
            loader
            ?? ImageLoadersManager(loaders: [ImageDownloader(configuration: downloads), FileLoader(), DataURLLoader()])
        metrics = ImageKitMetrics(factory: configuration.telemetry.metricsFactory)
        logger = configuration.telemetry.logger
        self.coders = coders
        self.transformer = transformer
        self.cacheKeyFilter = cacheKeyFilter
        self.cacheSerializer = cacheSerializer
        self.optionsProcessor = optionsProcessor
        self.configuration = configuration
        failedURLs = FailedURLList(timeToLive: configuration.failedURLTimeToLive)
        decodeQueue = BlockingQueue(
            name: "ImageKit.ImageManager.decode", width: max(1, configuration.decodeConcurrency))
        CallbackQueues.mark(configuration.callbackQueue)
    }

    /// The default namespace's cache; where its directory cannot be made, memory alone.
    private static func defaultCache(telemetry: ImageKitTelemetry) -> any ImageCaching {
        var configuration = ImageCacheConfiguration()
        configuration.telemetry = telemetry
        if let cache = try? ImageCache(configuration: configuration) { return cache }
        return ImageCache(
            memoryCache: MemoryCache(telemetry: telemetry), diskCache: UnavailableDiskCache(),
            configuration: configuration)
    }

    // MARK: Failed URLs

    /// Whether `url` is on the failed-URL list (loads of it fail with `blacklisted` unless
    /// they pass ``ImageLoadOptions/retryFailed``).
    public func isFailedURL(_ url: URL) -> Bool { failedURLs.contains(url.absoluteString) }

    /// Whether `url`, loaded with per-load `headers`, is on the failed-URL list. Failures are
    /// remembered per header set: one tenant's 403 does not block another tenant's load.
    public func isFailedURL(_ url: URL, requestHeaders headers: [String: String]) -> Bool {
        failedURLs.contains(FailedURLList.key(url.absoluteString, requestHeaders: headers))
    }

    /// Takes `url` off the failed-URL list, under every header set.
    public func removeFailedURL(_ url: URL) { failedURLs.remove(url.absoluteString) }

    /// Where in a load a failure happened: only the loader's and the decoder's failures can be
    /// the URL's own.
    public enum FailureStage: Sendable {
        /// Fetching the bytes.
        case load
        /// Decoding them.
        case decode
        /// Transforming the decoded image.
        case transform
    }

    /// The default rule for the failed-URL list (see
    /// ``ImageManagerConfiguration/shouldBlockFailedURL``).
    public static func blocksURL(after error: ImageError, at stage: FailureStage) -> Bool {
        switch stage {
        case .load:
            guard error.code == .invalidStatusCode, let status = error.httpStatusCode else { return false }
            return (400..<500).contains(status) && status != 408 && status != 429
        case .decode:
            return [.badImageData, .unsupportedFormat, .emptyData].contains(error.code)
        case .transform:
            return false
        }
    }

    /// Empties the failed-URL list.
    public func removeAllFailedURLs() { failedURLs.removeAll() }

    // MARK: Keys

    // Spec: TRK-01/03.
    /// The cache key a load of `url` with `options` and `context` uses: the key
    /// filter's output, plus the thumbnail, decode and transformer suffixes.
    public func cacheKey(for url: URL, options: ImageLoadOptions = [], context: ImageLoadContext = .init()) -> CacheKey
    {
        resolve(url, options: options, context: context).key
    }

    // MARK: Running loads

    /// Whether any load is still to deliver its final result.
    public var isRunning: Bool { state.withLock { !$0.running.isEmpty } }

    /// Loads that have not delivered their final result yet.
    public var runningCount: Int { state.withLock { $0.running.count } }

    /// Cancels every running load; each completes once with `cancelled`.
    public func cancelAll() {
        let tasks = state.withLock { Array($0.running.values) }
        for task in tasks { task.cancel() }
    }

    // MARK: Async

    // Spec: MGR-01.
    /// Loads `url` and returns its image.
    ///
    /// A memory hit returns without suspending. Cancelling the calling task cancels this caller
    /// only: a load other callers share goes on for them. With ``ImageLoadOptions/refreshCached``
    /// the cached image is returned at once and the revalidation goes on in the background,
    /// updating the caches (``imageEvents(for:options:context:)`` shows both results).
    ///
    /// - Throws: ``ImageError``: `invalidURL`, `blacklisted`, `cancelled`, the loader's and the
    ///   decoder's errors.
    public func loadImage(
        _ url: URL?, options: ImageLoadOptions = [],
        context: ImageLoadContext = .init()
    ) async throws(ImageError) -> ImageLoadResult {
        var memoryMissed = false
        if let url, let hit = memoryHit(url, options: options, context: context, missed: &memoryMissed) { return hit }
        let plan: ImageLoadPlan
        switch admit(url, options: options, context: context, memoryMissed: memoryMissed) {
        case .failure(let error): throw error
        case .success(.answered(let answer)): return answer
        case .success(.load(let resolved)): plan = resolved
        }
        let taskBox = Locked<ImageLoadTask?>(nil)
        let result: Result<ImageLoadResult, ImageError> = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<ImageLoadResult, ImageError>, Never>) in
                let resumed = Locked(false)
                let resume: @Sendable (Result<ImageLoadResult, ImageError>) -> Void = { result in
                    guard
                        !resumed.withLock({
                            let was = $0; $0 = true; return was
                        })
                    else { return }
                    continuation.resume(returning: result)
                }
                let task = subscribe(plan, wantsProgress: false, wantsPreviews: false, endsAtFirstResult: true) {
                    event in
                    switch event {
                    case .intermediate(let result): resume(.success(result))
                    case .finished(let result?): resume(result)
                    case .finished(nil), .progress, .preview, .notModified: break
                    }
                }
                taskBox.withLock { $0 = task }
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            taskBox.withLock { $0 }?.cancel()
        }
        return try result.get()
    }

    // Spec: MGR-02.
    /// Loads a URL given as a string: a string that is not a URL fails with `invalidURL`.
    public func loadImage(
        _ urlString: String, options: ImageLoadOptions = [],
        context: ImageLoadContext = .init()
    ) async throws(ImageError) -> ImageLoadResult {
        try await loadImage(URL(string: urlString), options: options, context: context)
    }

    /// The load as a stream of events: progress, previews (``ImageLoadOptions/progressiveLoad``),
    /// then the result — two results or a `notModified` with ``ImageLoadOptions/refreshCached``.
    /// The stream ends after the last event, or throws the load's ``ImageError``. Ending the
    /// iteration early cancels this caller.
    ///
    /// ```swift
    /// for try await event in manager.imageEvents(for: url, options: .progressiveLoad) {
    ///     if case .preview(let partial) = event { show(partial) }
    ///     if case .result(let result) = event { show(result.image) }
    /// }
    /// ```
    public func imageEvents(
        for url: URL?, options: ImageLoadOptions = [],
        context: ImageLoadContext = .init()
    ) -> AsyncThrowingStream<ImageLoadEvent, Error> {
        AsyncThrowingStream { continuation in
            let plan: ImageLoadPlan
            switch admit(url, options: options, context: context) {
            case .failure(let error):
                continuation.finish(throwing: error)
                return
            case .success(.answered(let answer)):
                continuation.yield(.result(answer))
                continuation.finish()
                return
            case .success(.load(let resolved)):
                plan = resolved
            }
            let task = subscribe(plan, wantsProgress: true, wantsPreviews: options.contains(.progressiveLoad)) {
                event in
                switch event {
                case .progress(let progress): continuation.yield(.progress(progress))
                case .preview(let preview): continuation.yield(.preview(preview))
                case .intermediate(let result): continuation.yield(.result(result))
                case .notModified(let metrics): continuation.yield(.notModified(metrics))
                case .finished(nil): continuation.finish()
                case .finished(.success(let result)?):
                    continuation.yield(.result(result))
                    continuation.finish()
                case .finished(.failure(let error)?):
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { termination in
                if case .cancelled = termination { task.cancel() }
            }
        }
    }

    // MARK: Completion handlers

    // Spec: MGR-01, MGR-18, MGR-12, MGR-24.
    /// Loads `url` and calls `completion` on the callback queue.
    ///
    /// `completion` is called exactly once — with the result, a failure, or `cancelled` after
    /// ``ImageLoadTask/cancel()`` — except with ``ImageLoadOptions/refreshCached``, where the
    /// cached image comes first and new bytes from the server make a second call (a 304 makes
    /// none). A memory hit started on the callback queue completes before this returns;
    /// started elsewhere, it completes asynchronously on the callback queue.
    ///
    /// - Parameters:
    ///   - url: the image URL; nil fails with `invalidURL`.
    ///   - options: how the load behaves.
    ///   - context: per-load objects (cache, loader, transformer) and settings.
    ///   - completion: the result, once (twice with ``ImageLoadOptions/refreshCached``).
    ///   - progress: bytes received, on the callback queue.
    ///   - preview: partial images with ``ImageLoadOptions/progressiveLoad``, on the callback queue.
    @discardableResult
    public func loadImage(
        with url: URL?, options: ImageLoadOptions = [], context: ImageLoadContext = .init(),
        progress: (@Sendable (ImageLoadProgress) -> Void)? = nil,
        preview: (@Sendable (DecodedImage) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageLoadResult, ImageError>) -> Void
    ) -> ImageLoadTask {
        startLoad(
            url, options: options, context: context, wantsProgress: progress != nil, wantsPreviews: preview != nil
        ) { event in
            switch event {
            case .progress(let update): progress?(update)
            case .preview(let image): preview?(image)
            case .intermediate(let result): completion(.success(result))
            case .finished(let result?): completion(result)
            case .finished(nil), .notModified: break
            }
        }
    }

    /// The queue a load with `context` calls back on.
    func callbackQueue(for context: ImageLoadContext) -> DispatchQueue {
        context.callbackQueue ?? configuration.callbackQueue
    }

    // Spec: MGR-24.
    /// Starts a load whose every event is handed to `handler` on the load's callback queue, in
    /// order: the form the completion-handler API, the prefetcher and the target layer share. An
    /// answer known at once (a memory hit, a refused URL) is handed over before this returns when
    /// called on that queue, otherwise asynchronously on it.
    func startLoad(
        _ url: URL?, options: ImageLoadOptions, context: ImageLoadContext, wantsProgress: Bool,
        wantsPreviews: Bool, handler: @escaping @Sendable (ImageLoadTask.Event) -> Void
    ) -> ImageLoadTask {
        let queue = callbackQueue(for: context)
        if context.callbackQueue != nil { CallbackQueues.mark(queue) }
        let plan: ImageLoadPlan
        switch admit(url, options: options, context: context) {
        case .failure(let error):
            return finishedTask(queue: queue) { handler(.finished(.failure(error))) }
        case .success(.answered(let answer)):
            return finishedTask(queue: queue) { handler(.finished(.success(answer))) }
        case .success(.load(let resolved)):
            plan = resolved
        }
        return subscribe(
            plan, wantsProgress: wantsProgress, wantsPreviews: wantsPreviews && options.contains(.progressiveLoad)
        ) { event in
            queue.async { handler(event) }
        }
    }

    /// A handle for a load answered at once: `deliver` runs inline on the callback queue,
    /// otherwise asynchronously on it.
    private func finishedTask(queue: DispatchQueue, _ deliver: @escaping @Sendable () -> Void) -> ImageLoadTask {
        let task = ImageLoadTask(id: 0, wantsProgress: false, wantsPreviews: false, sink: { _ in }, onEnd: { _, _ in })
        task.leave()
        CallbackQueues.run(on: queue, deliver)
        return task
    }

}
