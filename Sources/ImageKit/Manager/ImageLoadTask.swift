import Foundation

/// One caller's handle on a load (SDWebImage's combined operation, MGR-07).
///
/// ``cancel()`` detaches this caller: its completion reports ``ImageError/Code/cancelled``
/// exactly once, nothing of this load is stored, and the shared work (cache query, transfer,
/// decode) stops when no other caller of the same image is left.
public final class ImageLoadTask: ImageLoadCancellable {
    /// What a caller is told, in order; `finished` ends the stream of events.
    enum Event: Sendable {
        case progress(ImageLoadProgress)
        case preview(DecodedImage)
        /// A result that does not end the load: the cached image of a revalidation.
        case intermediate(ImageLoadResult)
        case notModified(TransferMetrics)
        /// The end: a result, a failure, or nil when nothing follows an intermediate result.
        case finished(Result<ImageLoadResult, ImageError>?)
    }

    let id: Int
    /// The caller asked for progress (or previews).
    let wantsProgress: Bool
    let wantsPreviews: Bool
    /// The caller takes one result (the async form): after a revalidation's cached image it
    /// leaves, and the revalidation goes on for the cache alone.
    let endsAtFirstResult: Bool
    private let sink: @Sendable (Event) -> Void
    private let state = Locked(State())
    private let onEnd: @Sendable (ImageLoadTask, _ cancelled: Bool) -> Void
    /// Told when ``priority`` changes (the job re-ranks its transfer).
    let onPriorityChange = Locked<(@Sendable () -> Void)?>(nil)

    private struct State {
        var isFinished = false
        var isCancelled = false
        var priority = ImageLoadPriority.normal
    }

    init(id: Int, wantsProgress: Bool, wantsPreviews: Bool, endsAtFirstResult: Bool = false, priority: ImageLoadPriority = .normal,
         sink: @escaping @Sendable (Event) -> Void, onEnd: @escaping @Sendable (ImageLoadTask, _ cancelled: Bool) -> Void) {
        state.withLock { $0.priority = priority }
        self.id = id
        self.wantsProgress = wantsProgress
        self.wantsPreviews = wantsPreviews
        self.endsAtFirstResult = endsAtFirstResult
        self.sink = sink
        self.onEnd = onEnd
    }

    /// This caller's priority. Changing it while the load waits re-ranks the shared transfer:
    /// the transfer runs at the highest priority among the callers that share it.
    public var priority: ImageLoadPriority {
        get { state.withLock { $0.priority } }
        set {
            state.withLock { $0.priority = newValue }
            onPriorityChange.withLock { $0 }?()
        }
    }

    /// The same as setting ``priority``.
    public func setPriority(_ priority: ImageLoadPriority) { self.priority = priority }

    /// Whether ``cancel()`` ended this load.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }
    /// Whether this caller has had its final answer (or was cancelled).
    public var isFinished: Bool { state.withLock { $0.isFinished } }

    public func cancel() {
        let first = state.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            state.isFinished = true
            state.isCancelled = true
            return true
        }
        guard first else { return }
        sink(.finished(.failure(ImageError(.cancelled, "the image load was cancelled"))))
        onEnd(self, true)
    }

    /// Ends this caller without telling it anything more (it already has its answer).
    func leave() {
        let first = state.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            state.isFinished = true
            return true
        }
        if first { onEnd(self, false) }
    }

    /// Passes `event` on unless this caller has already finished; a `finished` event is passed
    /// at most once.
    func send(_ event: Event) {
        if case .finished = event {
            let first = state.withLock { state -> Bool in
                guard !state.isFinished else { return false }
                state.isFinished = true
                return true
            }
            guard first else { return }
            sink(event)
            onEnd(self, false)
            return
        }
        // Under the lock, so that no event can follow `finished` (previews are produced on
        // other threads than the final result). Sinks only enqueue: a dispatch onto the callback
        // queue, a stream yield or a continuation resume, never the caller's code.
        state.withLock { state in
            guard !state.isFinished else { return }
            sink(event)
        }
    }
}
