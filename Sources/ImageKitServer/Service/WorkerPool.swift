import Foundation
import ImageKit

/// Runs CPU-bound work `width` at a time, off the caller's executor (a thread per worker, never
/// an event loop), with at most `queueLimit` waiting: beyond that a submission is refused at once
/// (the service answers 503). FIFO.
///
/// A place can be taken before the work exists (``reserve()``): the service takes one before it
/// fetches a source, so that a request the pool could not take is refused before the origin is
/// asked, not after its bytes arrived. Places are `width + queueLimit`, counting work running,
/// work waiting and places reserved.
final class WorkerPool: Sendable {
    /// A place in the pool held for work that is not ready yet; given back when the work is
    /// submitted with it, by ``release()``, or when the last reference goes.
    final class Reservation: Sendable {
        private let pool: WorkerPool
        private let held = Locked(true)

        fileprivate init(pool: WorkerPool) { self.pool = pool }

        deinit { release() }

        /// Gives the place back unused (the request ended, or joined work already in flight).
        func release() {
            if take() { pool.state.withLock { $0.reserved -= 1 } }
        }

        /// True the first time: the place is handed over to whoever asks.
        fileprivate func take() -> Bool {
            held.withLock { held in
                defer { held = false }
                return held
            }
        }
    }

    private let width: Int
    private let queueLimit: Int
    private let queue: DispatchQueue
    /// A job runs the work and returns how to hand its result over: the worker is given back
    /// (to the next waiting job, or freed) before the caller hears the result, so a caller that
    /// submits the moment another's result arrives finds the worker free, not busy.
    private typealias Job = @Sendable () -> @Sendable () -> Void
    private let state = Locked<(running: Int, waiting: [Job], reserved: Int)>((0, [], 0))
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
    /// Places reserved for work not submitted yet.
    var reservedCount: Int { state.withLock { $0.reserved } }

    /// A place for work to come; nil when every place is taken (running, waiting or reserved).
    func reserve() -> Reservation? {
        let places = width + queueLimit
        let taken = state.withLock { state -> Bool in
            guard state.running + state.waiting.count + state.reserved < places else { return false }
            state.reserved += 1
            return true
        }
        return taken ? Reservation(pool: self) : nil
    }

    /// Runs `body` on a worker, in the place `reservation` holds (never refused then), or in a
    /// free place; nil when there is none.
    func run<Output: Sendable>(reservation: Reservation? = nil, _ body: @escaping @Sendable () -> Output) async
        -> Output?
    {
        await withCheckedContinuation { (continuation: CheckedContinuation<Output?, Never>) in
            let submitted = ContinuousClock.now
            let job: Job = { [onWait] in
                onWait(ContinuousClock.now - submitted)
                let output = body()
                return { continuation.resume(returning: output) }
            }
            let reserved = reservation?.take() ?? false
            let places = width + queueLimit
            let admitted = state.withLock { state -> Bool? in
                if reserved {
                    state.reserved -= 1
                } else if state.running + state.waiting.count + state.reserved >= places {
                    return nil
                }
                if state.running < width {
                    state.running += 1
                    return true
                }
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
