import Foundation

// Spec: PRE-04.
/// Where one prefetch call stands, told after each of its URLs ends.
public struct ImagePrefetchProgress: Sendable {
    /// The URL that just ended.
    public var url: URL
    /// Why it was skipped; nil when it loaded (or a cache-only miss answered "no image").
    public var error: ImageError?
    /// URLs of this call that have ended, loaded or skipped.
    public var finishedCount: Int
    /// Ended URLs that failed.
    public var skippedCount: Int
    /// URLs in this call.
    public var totalCount: Int
}

// Spec: PRE-04.
/// How one prefetch call ended: told exactly once.
public struct ImagePrefetchSummary: Sendable, Hashable {
    /// URLs in the call.
    public var totalCount: Int
    /// URLs that ended, loaded or skipped: `totalCount` unless the call was cancelled.
    public var finishedCount: Int
    /// Ended URLs that failed (they count as finished too).
    public var skippedCount: Int
    /// The call was cancelled (``ImagePrefetchToken/cancel()`` or
    /// ``ImagePrefetcher/cancelPrefetching()``) before every URL ended.
    public var isCancelled: Bool

    /// A summary; the prefetcher makes these.
    public init(totalCount: Int, finishedCount: Int, skippedCount: Int, isCancelled: Bool = false) {
        self.totalCount = totalCount
        self.finishedCount = finishedCount
        self.skippedCount = skippedCount
        self.isCancelled = isCancelled
    }
}

/// One prefetch call (SDWebImage's `SDWebImagePrefetchToken`): its counters, and a way to
/// cancel it without touching other calls.
public final class ImagePrefetchToken: Sendable {
    /// The URLs of this call, in the order they are started.
    public let urls: [URL]
    let queue: DispatchQueue
    private let progressHandler: (@Sendable (ImagePrefetchProgress) -> Void)?
    private let completionHandler: (@Sendable (ImagePrefetchSummary) -> Void)?
    private let state = Locked(State())
    /// Removes this token's waiting URLs from the prefetcher's line.
    private let onCancel: (@Sendable (ImagePrefetchToken) -> Void)?

    private struct State {
        var finished = 0
        var skipped = 0
        /// The completion has been told (or is on its way): nothing more is counted or told.
        var isDone = false
        var isCancelled = false
        /// Loads of this call in flight, by URL index.
        var running: [Int: ImageLoadTask] = [:]
    }

    init(
        urls: [URL], queue: DispatchQueue, progress: (@Sendable (ImagePrefetchProgress) -> Void)?,
        completion: (@Sendable (ImagePrefetchSummary) -> Void)?, onCancel: (@Sendable (ImagePrefetchToken) -> Void)?
    ) {
        self.urls = urls
        self.queue = queue
        progressHandler = progress
        completionHandler = completion
        self.onCancel = onCancel
    }

    /// URLs in this call.
    public var totalCount: Int { urls.count }
    /// URLs that have ended, loaded or skipped.
    public var finishedCount: Int { state.withLock { $0.finished } }
    /// Ended URLs that failed.
    public var skippedCount: Int { state.withLock { $0.skipped } }
    /// Whether the completion has been told: every URL ended, or the call was cancelled.
    public var isFinished: Bool { state.withLock { $0.isDone } }
    /// True once `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Cancels this call only: its URLs not yet started are never requested, its loads in
    /// flight are cancelled (a load another caller shares goes on for that caller), and the
    /// completion is told once, with ``ImagePrefetchSummary/isCancelled`` and the counts so far.
    /// Nothing is told after it. Cancelling a finished call does nothing.
    public func cancel() {
        let tasks = state.withLock { state -> [ImageLoadTask]? in
            guard !state.isDone else { return nil }
            state.isDone = true
            state.isCancelled = true
            let tasks = Array(state.running.values)
            state.running = [:]
            return tasks
        }
        guard let tasks else { return }
        onCancel?(self)
        for task in tasks { task.cancel() }
        let summary = self.summary(isCancelled: true)
        CallbackQueues.run(on: queue) { self.completionHandler?(summary) }
    }

    /// The counts as they are now.
    public var summary: ImagePrefetchSummary { summary(isCancelled: isCancelled) }

    private func summary(isCancelled: Bool) -> ImagePrefetchSummary {
        state.withLock {
            ImagePrefetchSummary(
                totalCount: urls.count, finishedCount: $0.finished, skippedCount: $0.skipped,
                isCancelled: isCancelled)
        }
    }

    // MARK: Called by the prefetcher

    /// Records the load of URL `index`; false when the call was cancelled meanwhile (the
    /// caller then cancels the load).
    func started(_ task: ImageLoadTask, index: Int) -> Bool {
        state.withLock { state in
            guard !state.isCancelled else { return false }
            if !task.isFinished { state.running[index] = task }
            return true
        }
    }

    // Spec: PRE-04.
    /// URL `index` ended; runs on the callback queue. Counts it, tells the progress handler,
    /// and the completion when it was the last.
    func ended(index: Int, error: ImageError?) {
        let counts = state.withLock { state -> (finished: Int, skipped: Int, isLast: Bool)? in
            state.running[index] = nil
            guard !state.isDone else { return nil }
            state.finished += 1
            if error != nil { state.skipped += 1 }
            if state.finished == urls.count { state.isDone = true }
            return (state.finished, state.skipped, state.isDone)
        }
        guard let counts else { return }
        progressHandler?(
            ImagePrefetchProgress(
                url: urls[index], error: error, finishedCount: counts.finished,
                skippedCount: counts.skipped, totalCount: urls.count))
        if counts.isLast {
            completionHandler?(
                ImagePrefetchSummary(
                    totalCount: urls.count, finishedCount: counts.finished,
                    skippedCount: counts.skipped))
        }
    }

    /// An empty call: complete at once.
    func completeEmpty() {
        state.withLock { $0.isDone = true }
        CallbackQueues.run(on: queue) {
            self.completionHandler?(ImagePrefetchSummary(totalCount: 0, finishedCount: 0, skippedCount: 0))
        }
    }
}
