import Foundation
import Tracing

/// The shared work behind every caller that asked for the same image (same final cache key
/// and the same settings): one cache query, one transfer, one decode, one store. Each caller
/// (an ``ImageLoadTask``) gets its own events and exactly one end.
final class ImageLoadJob: Sendable {
    let plan: ImageLoadPlan
    private let state = Locked(State())

    private struct State {
        var tasks: [Int: ImageLoadTask] = [:]
        var work: Task<Void, Never>?
        var loaderToken: (any ImageLoadCancellable)?
        /// The cached image of a revalidation, for callers that join after it was delivered.
        var intermediate: ImageLoadResult?
        var isFinished = false
        /// The final bytes are being decoded: no more previews.
        var isFinalizing = false
        var previewInFlight = false
        var lastPreview: Double = 0
        var progressive: ProgressiveDecoder?
        /// The job's open spans, outermost (`imagekit.load`) first; each is ended once.
        var spans: [any Span] = []
    }

    init(plan: ImageLoadPlan) {
        self.plan = plan
    }

    /// Adds a caller; false when the job has already finished (the caller starts a new one).
    /// A caller of higher priority than the job's raises the job and its transfer.
    func add(_ task: ImageLoadTask) -> Bool {
        let (added, intermediate) = state.withLock { state -> (Bool, ImageLoadResult?) in
            guard !state.isFinished else { return (false, nil) }
            state.tasks[task.id] = task
            return (true, state.intermediate)
        }
        guard added else { return false }
        task.onPriorityChange.withLock { $0 = { [weak self] in self?.updatePriority() } }
        updatePriority()
        if let intermediate { deliverIntermediate(intermediate, to: [task]) }
        return added
    }

    /// The highest priority among the callers.
    var priority: ImageLoadPriority {
        state.withLock { $0.tasks.values.map(\.priority).max() } ?? plan.priority
    }

    /// Hands the callers' highest priority to the running transfer.
    func updatePriority() {
        let token = state.withLock { $0.loaderToken }
        token?.setPriority(priority)
    }

    /// Removes a caller; returns true when it was the last one and the job should stop.
    func remove(_ task: ImageLoadTask, cancelled: Bool) -> Bool {
        state.withLock { state in
            guard state.tasks.removeValue(forKey: task.id) != nil else { return false }
            return cancelled && state.tasks.isEmpty && !state.isFinished
        }
    }

    func start(_ work: Task<Void, Never>) {
        state.withLock { $0.work = work }
    }

    /// Stops the shared work (the last caller cancelled).
    func stop() {
        let (work, token) = state.withLock { state -> (Task<Void, Never>?, (any ImageLoadCancellable)?) in
            state.isFinished = true
            return (state.work, state.loaderToken)
        }
        work?.cancel()
        token?.cancel()
    }

    var isStopped: Bool { state.withLock { $0.isFinished } }

    var tasks: [ImageLoadTask] { state.withLock { Array($0.tasks.values) } }

    var wantsProgress: Bool { state.withLock { $0.tasks.values.contains { $0.wantsProgress || $0.wantsPreviews } } }

    func setLoaderToken(_ token: any ImageLoadCancellable) {
        state.withLock { $0.loaderToken = token }
    }

    var loaderToken: (any ImageLoadCancellable)? { state.withLock { $0.loaderToken } }

    /// The body so far, gathered from the loader's progress reports when a preview or an early
    /// finish needs it (``ImageLoadRequest/deliversReceivedBytes``).
    private let receivedBytes = Locked(Data())

    /// Appends `bytes` (the loader's ``ImageLoadProgress/newBytes``) to the body so far and
    /// returns it. The value shares its storage until the next append, which copies only while
    /// a preview still holds the previous value.
    @discardableResult
    func receive(_ bytes: Data?) -> Data {
        receivedBytes.withLock { received in
            if let bytes, !bytes.isEmpty { received.append(bytes) }
            return received
        }
    }

    // MARK: Delivery

    func deliverIntermediate(_ result: ImageLoadResult) {
        let tasks = state.withLock { state -> [ImageLoadTask] in
            state.intermediate = result
            return Array(state.tasks.values)
        }
        deliverIntermediate(result, to: tasks)
    }

    private func deliverIntermediate(_ result: ImageLoadResult, to tasks: [ImageLoadTask]) {
        for task in tasks {
            task.send(.intermediate(result))
            if task.endsAtFirstResult { task.leave() }
        }
    }

    func send(_ event: ImageLoadTask.Event) {
        for task in tasks { task.send(event) }
    }

    /// Ends every caller with `result` (nil: nothing after an intermediate result). The job's
    /// open spans end first, innermost first, so that none outlives its parent or a caller's.
    func finish(_ result: Result<ImageLoadResult, ImageError>?) {
        let (tasks, spans) = state.withLock { state -> ([ImageLoadTask], [any Span]) in
            state.isFinished = true
            state.isFinalizing = true
            state.progressive = nil
            defer { state.spans = [] }
            return (Array(state.tasks.values), state.spans)
        }
        if let load = spans.first, case .failure(let error) = result, error.code != .cancelled {
            load.recordError(error)
            load.setStatus(SpanStatus(code: .error))
        }
        for span in spans.reversed() { span.end() }
        for task in tasks { task.send(.finished(result)) }
    }

    /// Keeps `span` open under the job's spans until ``closeSpans(from:)`` or ``finish(_:)``;
    /// returns its depth.
    func openSpan(_ span: any Span) -> Int {
        state.withLock { state in
            state.spans.append(span)
            return state.spans.count - 1
        }
    }

    /// Ends the spans opened at `depth` and under it that ``finish(_:)`` has not ended.
    func closeSpans(from depth: Int) {
        let spans = state.withLock { state -> ArraySlice<any Span> in
            guard state.spans.count > depth else { return [] }
            defer { state.spans.removeSubrange(depth...) }
            return state.spans[depth...]
        }
        for span in spans.reversed() { span.end() }
    }

    // MARK: Progressive previews

    /// No previews after this: the final bytes are here.
    func beginFinalizing() {
        state.withLock { $0.isFinalizing = true }
    }

    /// Whether a preview may be made now: some caller wants one, none is being decoded, the
    /// last was at least `interval` seconds ago. Reserves the slot when it answers yes.
    func reservePreview(now: Double, interval: Double) -> ProgressiveDecoder? {
        state.withLock { state in
            guard !state.isFinalizing, !state.previewInFlight, now - state.lastPreview >= interval,
                state.tasks.values.contains(where: \.wantsPreviews)
            else { return nil }
            state.previewInFlight = true
            state.lastPreview = now
            if state.progressive == nil {
                state.progressive = ProgressiveDecoder(options: plan.decoding, coders: plan.coders)
            }
            return state.progressive
        }
    }

    /// Hands a preview to the callers that want previews (nothing once the final is decoding).
    func deliverPreview(_ preview: DecodedImage?) {
        let tasks = state.withLock { state -> [ImageLoadTask] in
            state.previewInFlight = false
            guard preview != nil, !state.isFinalizing else { return [] }
            return state.tasks.values.filter(\.wantsPreviews)
        }
        guard let preview else { return }
        for task in tasks { task.send(.preview(preview)) }
    }
}
