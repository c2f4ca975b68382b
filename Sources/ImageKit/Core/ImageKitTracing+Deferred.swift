import Tracing

extension ImageKitTracing {
    /// Spans of synchronous work on a thread that is not the task's (a worker pool's), timed
    /// where the work runs and handed to the tracer afterwards from the task, with the times
    /// they were measured at.
    ///
    /// A tracer such as swift-otel's passes every span's start and end to a task of its own:
    /// from a pool thread each of them wakes that task's thread, while from the request's task
    /// they queue behind it. Use it for leaf spans only: a deferred span has no context while
    /// its work runs, so nothing can be its child and no `traceparent` can name it.
    ///
    /// ```swift
    /// let trace = ServiceContext.current ?? .topLevel
    /// let (thumbnail, spans) = await pool.run {
    ///     var spans = ImageKitTracing.DeferredSpans()
    ///     let thumbnail = spans.record("thumbnail") { makeThumbnail(bytes) }
    ///     return (thumbnail, spans)
    /// }
    /// spans.report(under: trace)   // one span "thumbnail", child of the task's span
    /// ```
    public struct DeferredSpans: Sendable {
        private struct Entry: Sendable {
            let name: String
            let start: DefaultTracerClock.Timestamp
            let end: DefaultTracerClock.Timestamp
            let error: (any Error)?
        }

        private var entries: [Entry] = []

        /// No spans yet.
        public init() {}

        /// Whether no work was recorded.
        public var isEmpty: Bool { entries.isEmpty }

        /// Runs `body` and keeps its start, end and any error it throws as a span named `name`.
        public mutating func record<Success, Failure: Error>(
            _ name: String, _ body: () throws(Failure) -> Success
        ) throws(Failure) -> Success {
            let start = DefaultTracerClock.now
            do {
                let value = try body()
                entries.append(Entry(name: name, start: start, end: DefaultTracerClock.now, error: nil))
                return value
            } catch {
                entries.append(Entry(name: name, start: start, end: DefaultTracerClock.now, error: error))
                throw error
            }
        }

        /// Hands the recorded spans to the bootstrapped tracer as children of `context`, in the
        /// order their work ran; a thrown error is recorded on its span and sets its status.
        public func report(under context: ServiceContext) {
            guard !entries.isEmpty else { return }
            let tracer = InstrumentationSystem.tracer
            for entry in entries {
                let span = tracer.startSpan(entry.name, context: context, ofKind: .internal, at: entry.start)
                if let error = entry.error {
                    span.recordError(error, attributes: [:], at: entry.end)
                    span.setStatus(SpanStatus(code: .error))
                }
                span.end(at: entry.end)
            }
        }
    }
}
