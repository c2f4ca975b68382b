import Foundation
import Synchronization

// Spec: MGR-04.
/// URLs that failed permanently (SDWebImage's failed-URL "blacklist"), keyed by the
/// URL itself, not by the cache key. Kept in memory only; entries expire after an optional TTL.
final class FailedURLList: Sendable {
    private let entries = Locked<[String: Double]>([:])
    /// How many entries there are, read without the lock: the common case is an empty list,
    /// and every load asks.
    private let entryCount = Atomic<Int>(0)
    /// Seconds an entry lasts; nil: until removed.
    let timeToLive: TimeInterval?
    private let clock: @Sendable () -> Double

    init(timeToLive: TimeInterval?, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate })
    {
        self.timeToLive = timeToLive
        self.clock = clock
    }

    /// The entry for a URL loaded with per-load `headers`: failures are remembered per header set.
    static func key(_ url: String, requestHeaders headers: [String: String]) -> String {
        headers.isEmpty ? url : url + "\u{0}" + RequestHeaderDigest.digest(headers)
    }

    func contains(_ url: String) -> Bool {
        guard entryCount.load(ordering: .relaxed) > 0 else { return false }
        return entries.withLock { entries in
            guard let added = entries[url] else { return false }
            if let timeToLive, clock() - added >= timeToLive {
                entries[url] = nil
                entryCount.store(entries.count, ordering: .relaxed)
                return false
            }
            return true
        }
    }

    func insert(_ url: String) {
        let now = clock()
        entries.withLock { entries in
            entries[url] = now
            entryCount.store(entries.count, ordering: .relaxed)
        }
    }

    func remove(_ url: String) {
        guard entryCount.load(ordering: .relaxed) > 0 else { return }
        entries.withLock { entries in
            entries[url] = nil
            entryCount.store(entries.count, ordering: .relaxed)
        }
    }

    func removeAll() {
        entries.withLock { entries in
            entries.removeAll()
            entryCount.store(0, ordering: .relaxed)
        }
    }

    var count: Int { entries.withLock { $0.count } }
}
