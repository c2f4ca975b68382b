import Foundation

/// Runs blocking work (file IO, decoding) on at most `width` threads, bridging to async code
/// and to cancellable completion handlers. Every submission completes exactly once: with its
/// result, or with ``ImageError/Code/cancelled`` when cancelled before it ran.
final class BlockingQueue: Sendable {
    private let queue: OperationQueue

    init(name: String, width: Int) {
        let queue = OperationQueue()
        queue.name = name
        queue.maxConcurrentOperationCount = max(1, width)
        queue.qualityOfService = .userInitiated
        self.queue = queue
    }

    /// A submitted piece of work; ``cancel()`` completes it with `cancelled` if it has not run.
    final class Ticket: Sendable {
        fileprivate let completion: Locked<(@Sendable (Result<Void, ImageError>) -> Void)?>
        fileprivate init(_ completion: @escaping @Sendable (Result<Void, ImageError>) -> Void) {
            self.completion = Locked(completion)
        }

        /// Completes the ticket at most once; returns false when it had already completed.
        @discardableResult
        fileprivate func finish(_ result: Result<Void, ImageError>) -> Bool {
            guard let completion = completion.withLock({ $0.take() }) else { return false }
            completion(result)
            return true
        }

        var isFinished: Bool { completion.withLock { $0 == nil } }

        func cancel() {
            finish(.failure(ImageError(.cancelled, "the cache operation was cancelled")))
        }
    }

    /// Runs `body` on the queue and then `completion`, unless the ticket was cancelled first.
    func submit<Output: Sendable>(
        _ body: @escaping @Sendable () throws(ImageError) -> Output,
        completion: @escaping @Sendable (Result<Output, ImageError>) -> Void
    ) -> Ticket {
        let output = Locked<Output?>(nil)
        let failure = Locked<ImageError?>(nil)
        let ticket = Ticket { result in
            switch result {
            case .success:
                if let value = output.withLock({ $0.take() }) {
                    completion(.success(value))
                } else {
                    completion(.failure(failure.withLock { $0 } ?? ImageError(.internalError, "no result")))
                }
            case .failure(let error):
                completion(.failure(error))
            }
        }
        queue.addOperation {
            guard !ticket.isFinished else { return }  // cancelled while queued: skip the IO
            do {
                let value = try body()
                output.withLock { $0 = value }
            } catch {
                failure.withLock { $0 = error as? ImageError ?? ImageError(.internalError, "\(error)") }
            }
            ticket.finish(.success(()))
        }
        return ticket
    }

    /// Async form: cancelling the calling task cancels the work if it has not started.
    func run<Output: Sendable>(_ body: @escaping @Sendable () throws(ImageError) -> Output) async throws(ImageError)
        -> Output
    {
        let ticketBox = Locked<Ticket?>(nil)
        let result: Result<Output, ImageError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ticket = submit(body) { continuation.resume(returning: $0) }
                ticketBox.withLock { $0 = ticket }
                if Task.isCancelled { ticket.cancel() }
            }
        } onCancel: {
            ticketBox.withLock { $0 }?.cancel()
        }
        return try result.get()
    }
}
