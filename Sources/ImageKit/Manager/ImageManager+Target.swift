import Foundation

extension ImageManager {
    // Spec: VIEW-02…09, VIEW-12, VIEW-07/08, VIEW-09, VIEW-02.
    /// Loads `url` into `target`: the target shows the latest image it asked for, never a late
    /// one (SDWebImage's `sd_setImageWithURL:…`).
    ///
    /// In order: the load running into `target` under the same operation key is cancelled (its
    /// completion is told `cancelled` and it never touches the target again); the placeholder is
    /// set (now when called on the callback queue, else first thing on it) unless
    /// ``ImageLoadOptions/delayPlaceholder`` keeps it for a load that ends without an image; the
    /// target's progress is reset; then the manager loads. Previews of a
    /// ``ImageLoadOptions/progressiveLoad`` are set on the target without a completion call, and
    /// the finished image is set with a transition flag. With
    /// ``ImageLoadOptions/avoidAutoSetImage`` nothing is set: the completion gets every image,
    /// previews included (`finished` false), and the caller shows it. A failed load leaves the
    /// placeholder. A nil URL cancels the previous load and completes with `invalidURL` without
    /// asking the manager.
    ///
    /// Everything runs on the callback queue of `context` (else the manager's), and nothing at
    /// all — no completion either — once the target is deallocated; its load then runs to its
    /// end for the caches.
    ///
    /// ```swift
    /// manager.loadImage(into: cell, url: url, placeholder: grey,
    ///                   context: .init(thumbnailPixelSize: PixelSize(128)),
    ///                   completion: { result, finished in
    ///     if case .failure(let error) = result { log(error) }
    /// })
    /// ```
    ///
    /// - Parameters:
    ///   - target: the target to fill; held weakly.
    ///   - url: the image URL; nil shows the placeholder and fails with `invalidURL`.
    ///   - placeholder: shown at once unless ``ImageLoadOptions/delayPlaceholder``.
    ///   - options: how the load behaves.
    ///   - context: per-load objects and settings; its callback queue is the target's.
    ///   - operationKey: loads under different keys into one target are independent;
    ///     nil: ``ImageTarget/defaultImageLoadOperationKey``.
    ///   - progress: bytes received, on the callback queue, for the current load only.
    ///   - completion: the result and whether it is final (`false` only for previews with
    ///     ``ImageLoadOptions/avoidAutoSetImage``). With ``ImageLoadOptions/refreshCached`` a
    ///     second final result follows when the server has new bytes.
    /// - Returns: the load's task; nil for a nil URL.
    @discardableResult
    public func loadImage(
        into target: some ImageTarget, url: URL?, placeholder: DecodedImage? = nil,
        options: ImageLoadOptions = [], context: ImageLoadContext = .init(), operationKey: String? = nil,
        progress: (@Sendable (ImageLoadProgress) -> Void)? = nil,
        completion: (@Sendable (Result<ImageLoadResult, ImageError>, _ finished: Bool) -> Void)? = nil
    ) -> ImageLoadTask? {
        let key = operationKey ?? target.defaultImageLoadOperationKey
        let registry = ImageTargetRegistry.shared
        let (id, replaced) = registry.begin(target, key: key)
        replaced?.cancel()
        let queue = callbackQueue(for: context)
        if context.callbackQueue != nil { CallbackQueues.mark(queue) }
        let delivery = TargetDelivery(
            target: target, key: key, id: id, url: url, placeholder: placeholder, options: options,
            progress: progress, completion: completion)
        // Placeholder and progress reset before the load can deliver anything: inline here, or
        // queued ahead of the load's events on the same queue.
        CallbackQueues.run(on: queue) { delivery.begin() }
        guard let url else {
            CallbackQueues.run(on: queue) {
                delivery.handle(.finished(.failure(ImageError(.invalidURL, "the image URL is nil"))))
            }
            return nil
        }
        let task = startLoad(
            url, options: options, context: context, wantsProgress: true,
            wantsPreviews: true
        ) { event in
            delivery.handle(event)
        }
        registry.attach(task, target: ObjectIdentifier(target), key: key, id: id)
        return task
    }
}

// Spec: VIEW-05…08.
/// One load into one target: applies to the load's events, which arrive in order on
/// the callback queue. Holds the target weakly.
private final class TargetDelivery<Target: ImageTarget>: Sendable {
    private weak let target: Target?
    private let targetID: ObjectIdentifier
    private let key: String
    private let id: Int
    private let url: URL?
    private let placeholder: DecodedImage?
    private let options: ImageLoadOptions
    private let progress: (@Sendable (ImageLoadProgress) -> Void)?
    private let completion: (@Sendable (Result<ImageLoadResult, ImageError>, Bool) -> Void)?
    /// Whether the target was told any progress since the load began.
    private let progressTold = Locked(false)

    init(
        target: Target, key: String, id: Int, url: URL?, placeholder: DecodedImage?, options: ImageLoadOptions,
        progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: (@Sendable (Result<ImageLoadResult, ImageError>, Bool) -> Void)?
    ) {
        self.target = target
        targetID = ObjectIdentifier(target)
        self.key = key
        self.id = id
        self.url = url
        self.placeholder = placeholder
        self.options = options
        self.progress = progress
        self.completion = completion
    }

    private var isCurrent: Bool { ImageTargetRegistry.shared.isCurrent(targetID, key: key, id: id) }

    // Spec: VIEW-05/06.
    /// The placeholder (unless delayed) and the progress reset.
    func begin() {
        guard let target, isCurrent else { return }
        if !options.contains(.delayPlaceholder) {
            target.setImage(placeholder, data: nil, cacheType: .none, url: url, animated: false)
        }
        target.imageLoadProgressDidChange(ImageTargetProgress(completedUnitCount: 0, totalUnitCount: 0))
    }

    func handle(_ event: ImageLoadTask.Event) {
        var isEnd = false
        if case .finished = event { isEnd = true }
        let current = isCurrent
        if isEnd { ImageTargetRegistry.shared.end(targetID, key: key, id: id) }
        guard let target else { return }  // VIEW-07: nothing for a deallocated target
        guard current else {
            // Replaced by a newer load or cancelled: tell the caller once, touch nothing.
            if isEnd { completion?(.failure(ImageError(.cancelled, "the image load was cancelled")), true) }
            return
        }
        switch event {
        case .progress(let update):
            progressTold.withLock { $0 = true }
            target.imageLoadProgressDidChange(
                ImageTargetProgress(
                    completedUnitCount: update.receivedBytes,
                    totalUnitCount: update.expectedBytes ?? 0))
            progress?(update)
        case .preview(let image):
            // VIEW-07: a preview is set without a completion call, or with avoidAutoSetImage
            // given to the completion (not finished) and not set.
            if options.contains(.avoidAutoSetImage) {
                guard let url else { return }
                completion?(
                    .success(
                        ImageLoadResult(
                            image: image, data: nil, cacheType: .none, url: url,
                            cacheKey: CacheKey(url.absoluteString))), false)
            } else {
                target.setImage(image, data: nil, cacheType: .none, url: url, animated: false)
            }
        case .intermediate(let result), .finished(.success(let result)?):
            finish(target, result)
        case .finished(.failure(let error)?):
            if error.code != .cancelled, options.contains(.delayPlaceholder) {
                target.setImage(placeholder, data: nil, cacheType: .none, url: url, animated: transition(for: .none))
            }
            completion?(.failure(error), true)
        case .notModified, .finished(nil):
            break
        }
    }

    // Spec: VIEW-06/07.
    /// The target's last steps for a finished result: progress completed, then the image.
    private func finish(_ target: Target, _ result: ImageLoadResult) {
        if !progressTold.withLock({ $0 }) { target.imageLoadProgressDidChange(.unknownCompleted) }
        if let image = result.image {
            if !options.contains(.avoidAutoSetImage) {
                target.setImage(
                    image, data: result.data, cacheType: result.cacheType, url: result.url,
                    animated: transition(for: result.cacheType))
            }
        } else if options.contains(.delayPlaceholder) {
            target.setImage(
                placeholder, data: nil, cacheType: result.cacheType, url: result.url,
                animated: transition(for: result.cacheType))
        }
        completion?(.success(result), true)
    }

    // Spec: VIEW-08.
    /// For finished results.
    private func transition(for cacheType: ImageCacheType) -> Bool {
        if options.contains(.forceTransition) { return true }
        switch cacheType {
        case .none: return true
        case .disk: return options.isDisjoint(with: [.queryMemoryDataSync, .queryDiskDataSync])
        case .memory, .all: return false
        }
    }
}
