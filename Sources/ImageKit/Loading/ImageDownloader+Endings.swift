internal import CCurl
import DequeModule
import Foundation
import Logging

/// How a transfer ends: retried, delivered to every caller still attached (after its own response
/// hooks), or cancelled; then the next waiting transfer starts.
extension ImageDownloader {
    /// Ends a transfer: retried when it failed transiently and may be, else every remaining
    /// caller gets its result (after its own response hooks), and the next waiting one starts.
    func finish(_ operation: Operation, _ outcome: Result<RawResponse, ImageError>) {
        let delay = state.withLock { state -> TimeInterval? in
            state.running -= 1
            if let engine = operation.engine { state.engineLoads[engine] -= 1 }
            operation.engine = nil
            operation.transfer = nil
            guard let delay = retryDelay(for: operation, outcome), state.operations[operation.key] === operation,
                !operation.subscribers.isEmpty
            else { return nil }
            operation.attempt += 1
            operation.isBackingOff = true
            return delay
        }
        if let delay {
            metrics.downloadRetries.increment()
            let reason: String
            switch outcome {
            case .failure(let error): reason = error.code.rawValue
            case .success(let response): reason = "HTTP \(response.statusCode)"
            }
            logger.warning(
                "retrying a download",
                metadata: [
                    "imagekit.url": "\(operation.request.url)", "imagekit.reason": "\(reason)",
                    "imagekit.attempt": "\(operation.attempt)", "imagekit.delay": "\(delay)",
                ])
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in self?.retry(operation) }
            pump()
            return
        }
        let subscribers = state.withLock { state -> [Subscriber] in
            if state.operations[operation.key] === operation { state.operations[operation.key] = nil }
            defer { operation.subscribers = [:] }
            return Array(operation.subscribers.values)
        }
        report(outcome, of: operation)
        deliver(subscribers.map { ($0, result(of: outcome, for: $0, request: operation.request)) })
        pump()
    }

    private func report(_ outcome: Result<RawResponse, ImageError>, of operation: Operation) {
        switch outcome {
        case .success(let response)
        where configuration.acceptableStatusCodes.contains(response.statusCode) || response.statusCode == 304:
            metrics.downloadsSucceeded.increment()
            metrics.downloadBytes.increment(by: response.metrics.bytesReceived)
            metrics.download.record(seconds: response.metrics.total)
            logger.debug(
                "downloaded",
                metadata: [
                    "imagekit.url": "\(operation.request.url)", "imagekit.status": "\(response.statusCode)",
                    "imagekit.bytes": "\(response.body.count)", "imagekit.seconds": "\(response.metrics.total)",
                ])
        case .success(let response):
            metrics.downloadsFailed.increment()
            logger.debug(
                "download refused",
                metadata: ["imagekit.url": "\(operation.request.url)", "imagekit.status": "\(response.statusCode)"])
        case .failure(let error):
            if error.code != .cancelled { metrics.downloadsFailed.increment() }
            logger.debug(
                "download failed", metadata: ["imagekit.url": "\(operation.request.url)", "imagekit.error": "\(error)"])
        }
    }

    /// After a retry delay: queued again, unless every caller left meanwhile.
    private func retry(_ operation: Operation) {
        let requeued = state.withLock { state -> Bool in
            operation.isBackingOff = false
            guard state.operations[operation.key] === operation, !operation.subscribers.isEmpty else { return false }
            state.waiting.append(operation)
            return true
        }
        if requeued { pump() }
    }

    /// How long to wait before retrying `operation` after `outcome`; nil: no retry.
    private func retryDelay(for operation: Operation, _ outcome: Result<RawResponse, ImageError>) -> TimeInterval? {
        let policy = operation.request.retryPolicy ?? configuration.retryPolicy
        guard operation.attempt < policy.maxRetries, !operation.bytesObserved else { return nil }
        var retryAfter: TimeInterval?
        switch outcome {
        case .failure(let error):
            guard [.timedOut, .cannotConnect, .connectionLost].contains(error.code) else { return nil }
        case .success(let response):
            let status = response.statusCode
            guard status >= 500 || status == 408 || status == 429 else { return nil }
            guard !configuration.acceptableStatusCodes.contains(status) else { return nil }
            retryAfter = ImageRetryPolicy.retryAfterSeconds(response.headers["retry-after"])
        }
        let delay = policy.delay(
            beforeRetry: operation.attempt, retryAfter: retryAfter, random: Double.random(in: 0...1))
        // The deadline covers every attempt: retry only when, after the delay, time is left for a
        // connection to answer (a tenth of a second at least).
        if let delay, let remaining = remainingTime(of: operation), remaining - delay < 0.1 { return nil }
        return delay
    }

    func cancel(_ ticket: Ticket) {
        let attached = ticket.place.withLock { place -> (String, Int)? in
            switch place {
            case .pending(_, let priority):
                place = .pending(cancelled: true, priority: priority)
                return nil
            case .attached(let key, let id): return (key, id)
            case .done: return nil
            }
        }
        if let (key, id) = attached { cancel(key: key, id: id) }
    }

    func cancel(key: String, id: Int) {
        let outcome = state.withLock { state -> (Subscriber?, (CurlTransfer, Int)?) in
            guard let operation = state.operations[key], let subscriber = operation.subscribers.removeValue(forKey: id)
            else {
                return (nil, nil)
            }
            guard operation.subscribers.isEmpty else { return (subscriber, nil) }
            // The last caller left: drop a waiting or backing-off transfer, abort a running one.
            state.operations[key] = nil
            if operation.isWaiting {
                state.waiting.remove(operation)
                return (subscriber, nil)
            }
            guard let transfer = operation.transfer, let engine = operation.engine else { return (subscriber, nil) }
            return (subscriber, (transfer, engine))
        }
        guard let subscriber = outcome.0 else { return }
        deliver(.failure(ImageError(.cancelled, "the download was cancelled")), to: [subscriber])
        if let (transfer, engine) = outcome.1 { engines[engine].send(.cancel(transfer)) }
    }
}
