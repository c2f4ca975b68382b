import Foundation

// Spec: MGR-07.
/// One caller's handle on a load (SDWebImage's combined operation).
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
        /// Events accepted and not yet handed to the sink, in order, with whether the caller's
        /// end (and its `cancelled` flag) follows the event.
        var pending: [(event: Event, end: Bool?)] = []
        /// A thread is handing `pending` to the sink; others only append.
        var isDelivering = false
    }

    init(
        id: Int, wantsProgress: Bool, wantsPreviews: Bool, endsAtFirstResult: Bool = false,
        priority: ImageLoadPriority = .normal,
        sink: @escaping @Sendable (Event) -> Void, onEnd: @escaping @Sendable (ImageLoadTask, _ cancelled: Bool) -> Void
    ) {
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
        deliver(.finished(.failure(ImageError(.cancelled, "the image load was cancelled"))), cancelling: true)
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
        deliver(event, cancelling: false)
    }

    /// Accepts `event` in order unless the caller has finished, then hands the accepted events to
    /// the sink outside the lock (no lock is held across a sink, which may resume a
    /// continuation). Whichever thread finds no delivery running becomes the deliverer and drains
    /// the queue, so events reach the sink in the order they were accepted and none follows
    /// `finished`, even when they are sent from several threads (previews and the final result
    /// are produced on different ones) or from inside the sink (a caller that cancels from its
    /// own callback).
    private func deliver(_ event: Event, cancelling: Bool) {
        let delivers = state.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            var end: Bool?
            if case .finished = event {
                state.isFinished = true
                state.isCancelled = cancelling
                end = cancelling
            }
            state.pending.append((event, end))
            guard !state.isDelivering else { return false }
            state.isDelivering = true
            return true
        }
        guard delivers else { return }
        while let next = state.withLock({ state -> (event: Event, end: Bool?)? in
            guard !state.pending.isEmpty else {
                state.isDelivering = false
                return nil
            }
            return state.pending.removeFirst()
        }) {
            sink(next.event)
            if let cancelled = next.end { onEnd(self, cancelled) }
        }
    }
}
