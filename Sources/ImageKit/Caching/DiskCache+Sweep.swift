import Foundation

extension DiskCache {
    // Spec: CFG-04.
    /// The expiry and size sweep of SDWebImage's `removeExpiredData`:
    /// 1. every entry whose date (modification or access, per configuration) is at or before
    ///    now − maxAge is removed (none when maxAge is negative);
    /// 2. if maxSize > 0 and the rest still takes more than maxSize allocated bytes, entries
    ///    are removed oldest first until the total is below maxSize / 2.
    /// Hidden files and subdirectories are neither removed nor counted, except ImageKit's own
    /// temporary files older than an hour (left by a crash mid-write). Only one process sweeps
    /// a directory at a time; a sweep that finds the lock taken reports `skipped`.
    @discardableResult
    public func removeExpired() -> DiskCacheSweepReport {
        let started = Date()
        var report = DiskCacheSweepReport()
        guard let lock = DiskFiles.Lock(entriesDirectory + "/.sweep.lock", blocking: false) else {
            report.skipped = true
            return report
        }
        defer { withExtendedLifetime(lock) {} }
        index.withLock { $0.beginScan() }

        let now = self.now
        let expiration = configuration.maxAge < 0 ? nil : now.addingTimeInterval(-configuration.maxAge)
        struct Candidate { var name: String; var date: Date; var size: Int }
        var kept: [Candidate] = []
        var total = 0
        for name in DiskFiles.list(entriesDirectory) {
            let path = entriesDirectory + "/" + name
            if name.hasPrefix(".tmp-") {
                // A temporary file gets its entry's date only when complete, so its age is real
                // time (not the injected clock): an hour old means its writer died.
                if let info = DiskFiles.stat(path), info.modification < Date().addingTimeInterval(-3600) {
                    DiskFiles.remove(path)
                }
                continue
            }
            guard !name.hasPrefix("."), let info = DiskFiles.stat(path), info.isRegular else { continue }
            let date = configuration.expiryDate == .accessDate ? info.access : info.modification
            if let expiration, date <= expiration {
                if DiskFiles.remove(path) { report.removedExpired += 1 }
                DiskFiles.remove(metadataDirectory + "/" + name)
                continue
            }
            kept.append(Candidate(name: name, date: date, size: info.allocated))
            total += info.allocated
        }

        if configuration.maxSize > 0 && total > configuration.maxSize {
            let target = configuration.maxSize / 2
            kept.sort { $0.date < $1.date }
            var removed = Set<String>()
            for candidate in kept {
                if total < target { break }
                if DiskFiles.remove(entriesDirectory + "/" + candidate.name) {
                    total -= candidate.size
                    removed.insert(candidate.name)
                    report.removedForSize += 1
                }
                DiskFiles.remove(metadataDirectory + "/" + candidate.name)
            }
            kept.removeAll { removed.contains($0.name) }
        }

        // Sidecars whose entry is gone (another process removed it) go too.
        if DiskFiles.stat(metadataDirectory) != nil {
            let live = Set(kept.map(\.name))
            for name in DiskFiles.list(metadataDirectory) where !live.contains(name) && !name.hasPrefix(".") {
                if access(entriesDirectory + "/" + name, F_OK) != 0 { DiskFiles.remove(metadataDirectory + "/" + name) }
            }
        }

        var sizes: [String: Int] = [:]
        for candidate in kept { sizes[candidate.name] = candidate.size }
        index.withLock { $0.finishScan(sizes) }
        report.remainingCount = count
        report.remainingSize = totalSize
        report.duration = Date().timeIntervalSince(started)
        return report
    }
}

/// What a scan of a disk cache found (for tools; it walks the directory).
public struct DiskCacheStatistics: Sendable, Hashable {
    /// The number of entries.
    public var count = 0
    /// Allocated bytes.
    public var totalSize = 0
    /// The date of the oldest entry (by the configured expiry date), nil when empty.
    public var oldest: Date?
    /// The date of the newest entry, nil when empty.
    public var newest: Date?
    /// Entries a sweep would remove by age now.
    public var expiredCount = 0
}

extension DiskCache {
    /// Walks the directory and reports counts, size, the oldest and newest entry dates (by the
    /// configured expiry date) and how many entries have expired.
    public func statistics() -> DiskCacheStatistics {
        var statistics = DiskCacheStatistics()
        let expiration = configuration.maxAge < 0 ? nil : now.addingTimeInterval(-configuration.maxAge)
        for name in DiskFiles.list(entriesDirectory) where !name.hasPrefix(".") {
            guard let info = DiskFiles.stat(entriesDirectory + "/" + name), info.isRegular else { continue }
            let date = configuration.expiryDate == .accessDate ? info.access : info.modification
            statistics.count += 1
            statistics.totalSize += info.allocated
            statistics.oldest = min(statistics.oldest ?? date, date)
            statistics.newest = max(statistics.newest ?? date, date)
            if let expiration, date <= expiration { statistics.expiredCount += 1 }
        }
        return statistics
    }
}
