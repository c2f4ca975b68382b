import Foundation

/// URLs that failed permanently (SDWebImage's failed-URL "blacklist", MGR-04), keyed by the
/// URL itself, not by the cache key. Kept in memory only; entries expire after an optional TTL.
final class FailedURLList: Sendable {
    private let entries = Locked<[String: Double]>([:])
    /// Seconds an entry lasts; nil: until removed.
    let timeToLive: TimeInterval?
    private let clock: @Sendable () -> Double

    init(timeToLive: TimeInterval?, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        self.timeToLive = timeToLive
        self.clock = clock
    }

    func contains(_ url: String) -> Bool {
        entries.withLock { entries in
            guard let added = entries[url] else { return false }
            if let timeToLive, clock() - added >= timeToLive {
                entries[url] = nil
                return false
            }
            return true
        }
    }

    func insert(_ url: String) {
        let now = clock()
        entries.withLock { $0[url] = now }
    }

    func remove(_ url: String) {
        entries.withLock { $0[url] = nil }
    }

    func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    var count: Int { entries.withLock { $0.count } }
}
