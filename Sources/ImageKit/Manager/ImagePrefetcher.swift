import DequeModule
import Foundation

// Spec: PRE-01…04.
/// Warms the caches for a list of URLs (SDWebImage's `SDWebImagePrefetcher`).
///
/// Each ``prefetch(_:options:context:progress:completion:)`` call is its own transaction with
/// its own token, counters and completion; a new call never cancels earlier ones. The URLs of
/// every call wait in one first-in, first-out line and at most ``maxConcurrentPrefetchCount``
/// of them are loading at once, so a large list does not crowd out the loads a user is waiting
/// for: those go straight to the manager, and prefetch loads ask for low priority by default.
/// The prefetcher only calls ``ImageManager/loadImage(with:options:context:progress:preview:completion:)``'s
/// flow — memory, joined loads, disk, loader, decode, store — and keeps nothing of its own.
///
/// ```swift
/// let prefetcher = ImagePrefetcher(manager: manager)
/// let summary = await prefetcher.prefetch(urls, context: .init(thumbnailPixelSize: PixelSize(256)))
/// print("\(summary.finishedCount) of \(summary.totalCount), \(summary.skippedCount) skipped")
/// ```
public final class ImagePrefetcher: Sendable {
    /// The manager every load goes through.
    public let manager: ImageManager
    // Spec: PRE-03.
    /// Options of calls that pass none; default ``ImageLoadOptions/lowPriority``.
    public let options: ImageLoadOptions
    /// Context of calls that pass none.
    public let context: ImageLoadContext
    private let state: Locked<State>

    private struct Item {
        let token: ImagePrefetchToken
        let index: Int
        let options: ImageLoadOptions
        let context: ImageLoadContext
    }

    private struct State {
        var maxConcurrent: Int
        var pending = Deque<Item>()
        var running = 0
        /// A thread is starting pending items; others only adjust the counts.
        var isPumping = false
        /// Calls not yet finished, for ``cancelPrefetching()``.
        var tokens: [ObjectIdentifier: ImagePrefetchToken] = [:]
    }

    /// A prefetcher over ``ImageManager/shared`` with the defaults.
    public static let shared = ImagePrefetcher()

    // Spec: PRE-02.
    /// - Parameters:
    ///   - manager: the manager the loads go through.
    ///   - maxConcurrentPrefetchCount: loads at once over all calls; default 3.
    ///   - options: options of calls that pass none; default low priority.
    ///   - context: context of calls that pass none. Its callback queue (else the manager's) is
    ///     where progress and completions are told.
    public init(
        manager: ImageManager = .shared, maxConcurrentPrefetchCount: Int = 3,
        options: ImageLoadOptions = .lowPriority, context: ImageLoadContext = .init()
    ) {
        self.manager = manager
        self.options = options
        self.context = context
        state = Locked(State(maxConcurrent: max(1, maxConcurrentPrefetchCount)))
    }

    /// Loads at once over all calls (at least 1). Raising it starts waiting URLs at once;
    /// lowering it lets running loads finish.
    public var maxConcurrentPrefetchCount: Int {
        get { state.withLock { $0.maxConcurrent } }
        set {
            state.withLock { $0.maxConcurrent = max(1, newValue) }
            pump()
        }
    }

    /// Loads of this prefetcher in flight now.
    public var runningCount: Int { state.withLock { $0.running } }

    /// URLs waiting for a slot, over all calls.
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Loads `urls` into the caches.
    ///
    /// After each URL ends (loaded or failed) `progress` is told the counts; when the last one
    /// has ended, `completion` is told exactly once with (finished, skipped) — a failed URL
    /// counts as both. An empty list completes at once with (0, 0). Both run on the callback
    /// queue of `context` (else the manager's). Cancelling the token (or
    /// ``cancelPrefetching()``) completes it with the counts so far, marked cancelled.
    ///
    /// - Parameters:
    ///   - urls: the URLs to load, in order.
    ///   - progress: told the counts after each URL ends.
    ///   - completion: told once, when the last URL has ended or the token is cancelled.
    ///   - options: nil: the prefetcher's ``options``.
    ///   - context: nil: the prefetcher's ``context``.
    @discardableResult
    public func prefetch(
        _ urls: [URL], options: ImageLoadOptions? = nil, context: ImageLoadContext? = nil,
        progress: (@Sendable (ImagePrefetchProgress) -> Void)? = nil,
        completion: (@Sendable (ImagePrefetchSummary) -> Void)? = nil
    ) -> ImagePrefetchToken {
        let options = options ?? self.options
        let context = context ?? self.context
        let queue = manager.callbackQueue(for: context)
        if context.callbackQueue != nil { CallbackQueues.mark(queue) }
        let token = ImagePrefetchToken(urls: urls, queue: queue, progress: progress, completion: completion) {
            [weak self] token in
            self?.remove(token)
        }
        guard !urls.isEmpty else {
            token.completeEmpty()
            return token
        }
        state.withLock { state in
            state.tokens[ObjectIdentifier(token)] = token
            for index in urls.indices {
                state.pending.append(Item(token: token, index: index, options: options, context: context))
            }
        }
        pump()
        return token
    }

    /// Loads `urls` into the caches and returns how it went; cancelling the calling task
    /// cancels this call (the summary then says so). (For progress reports, use the
    /// completion-handler form.)
    public func prefetch(
        _ urls: [URL], options: ImageLoadOptions? = nil,
        context: ImageLoadContext? = nil
    ) async -> ImagePrefetchSummary {
        let tokenBox = Locked<ImagePrefetchToken?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let token = prefetch(
                    urls, options: options, context: context,
                    completion: { summary in
                        continuation.resume(returning: summary)
                    })
                tokenBox.withLock { $0 = token }
                if Task.isCancelled { token.cancel() }
            }
        } onCancel: {
            tokenBox.withLock { $0 }?.cancel()
        }
    }

    /// Cancels every call of this prefetcher (each completes once, marked cancelled).
    public func cancelPrefetching() {
        // Empty the line first: a slot freed by the first cancelled load must not start a URL
        // of a call that is about to be cancelled.
        let tokens = state.withLock { state -> [ImagePrefetchToken] in
            state.pending.removeAll()
            return Array(state.tokens.values)
        }
        for token in tokens { token.cancel() }
    }

    // MARK: The line

    /// A call ended or was cancelled: its waiting URLs leave the line.
    private func remove(_ token: ImagePrefetchToken) {
        state.withLock { state in
            state.tokens[ObjectIdentifier(token)] = nil
            state.pending.removeAll { $0.token === token }
        }
    }

    /// Starts waiting URLs while slots are free. One thread at a time does it, in a loop rather
    /// than by recursion: a load answered at once (a memory hit on the callback queue) frees its
    /// slot inside `start`, and thousands of them must not nest.
    private func pump() {
        let owns = state.withLock { state -> Bool in
            guard !state.isPumping else { return false }
            state.isPumping = true
            return true
        }
        guard owns else { return }
        while let item = state.withLock({ state -> Item? in
            guard state.running < state.maxConcurrent, let item = state.pending.popFirst() else {
                state.isPumping = false
                return nil
            }
            state.running += 1
            return item
        }) {
            start(item)
        }
    }

    private func start(_ item: Item) {
        let token = item.token
        let index = item.index
        let task = manager.startLoad(
            token.urls[index], options: item.options, context: item.context,
            wantsProgress: false, wantsPreviews: false
        ) { [weak self] event in
            guard case .finished(let result) = event else { return }
            var error: ImageError?
            if case .failure(let failure)? = result { error = failure }
            token.ended(index: index, error: error)
            if token.isFinished { self?.finished(token) }
            self?.slotFreed()
        }
        if !token.started(task, index: index) { task.cancel() }
    }

    private func finished(_ token: ImagePrefetchToken) {
        state.withLock { state in _ = state.tokens.removeValue(forKey: ObjectIdentifier(token)) }
    }

    private func slotFreed() {
        state.withLock { $0.running -= 1 }
        pump()
    }
}
