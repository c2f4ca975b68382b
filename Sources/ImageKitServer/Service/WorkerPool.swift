import Foundation
import ImageKit

/// Runs CPU-bound work `width` at a time, off the caller's executor (a thread per worker, never
/// an event loop), with at most `queueLimit` waiting: beyond that a submission is refused at once
/// (the service answers 503). FIFO.
final class WorkerPool: Sendable {
    private let width: Int
    private let queueLimit: Int
    private let queue: DispatchQueue
    /// A job runs the work and returns how to hand its result over: the worker is given back
    /// (to the next waiting job, or freed) before the caller hears the result, so a caller that
    /// submits the moment another's result arrives finds the worker free, not busy.
    private typealias Job = @Sendable () -> @Sendable () -> Void
    private let state = Locked<(running: Int, waiting: [Job])>((0, []))
    private let onWait: @Sendable (Duration) -> Void

    /// - Parameter onWait: told how long each job waited for a worker (the queue-wait metric).
    init(width: Int, queueLimit: Int, onWait: @escaping @Sendable (Duration) -> Void = { _ in }) {
        self.width = max(1, width)
        self.queueLimit = max(0, queueLimit)
        self.onWait = onWait
        queue = DispatchQueue(label: "ImageKitServer.workers", attributes: .concurrent)
    }

    /// Work waiting for a worker now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }
    var runningCount: Int { state.withLock { $0.running } }

    /// Runs `body` on a worker; nil when the queue is full.
    func run<Output: Sendable>(_ body: @escaping @Sendable () -> Output) async -> Output? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Output?, Never>) in
            let submitted = ContinuousClock.now
            let job: Job = { [onWait] in
                onWait(ContinuousClock.now - submitted)
                let output = body()
                return { continuation.resume(returning: output) }
            }
            let admitted = state.withLock { state -> Bool? in
                if state.running < width {
                    state.running += 1
                    return true
                }
                guard state.waiting.count < queueLimit else { return nil }
                state.waiting.append(job)
                return false
            }
            switch admitted {
            case nil: continuation.resume(returning: nil)
            case true?: start(job)
            case false?: break
            }
        }
    }

    private func start(_ job: @escaping Job) {
        queue.async { [self] in
            let handOver = job()
            let next = state.withLock { state -> Job? in
                if state.waiting.isEmpty {
                    state.running -= 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            if let next { start(next) }
            handOver()
        }
    }
}
