import Foundation

/// Marks callback queues so that a delivery can tell whether it already runs on its queue.
enum CallbackQueues {
    private static let key = DispatchSpecificKey<UInt>()

    static func mark(_ queue: DispatchQueue) {
        queue.setSpecific(key: key, value: UInt(bitPattern: ObjectIdentifier(queue).hashValue))
    }

    static func isCurrent(_ queue: DispatchQueue) -> Bool {
        guard let current = DispatchQueue.getSpecific(key: key) else { return false }
        return current == UInt(bitPattern: ObjectIdentifier(queue).hashValue)
    }

    // Spec: MGR-24.
    /// Runs `body` on `queue`: inline when already there, else asynchronously.
    static func run(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        if isCurrent(queue) { body() } else { queue.async(execute: body) }
    }
}

/// Lets something happen at most once per interval (a log line for a failure that repeats).
final class RateLimit: Sendable {
    private let interval: Double
    private let last = Locked<Double>(-.infinity)

    init(interval: Double) { self.interval = interval }

    func shouldLog(now: Double = ProcessInfo.processInfo.systemUptime) -> Bool {
        last.withLock { last in
            guard now - last >= interval else { return false }
            last = now
            return true
        }
    }
}
