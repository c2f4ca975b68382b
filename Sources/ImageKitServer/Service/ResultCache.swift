import Crypto
import Foundation
import ImageKit

/// An encoded result and what its response needs without the source: its `ETag`, the origin's
/// `Last-Modified`, and until when it is served without looking at the source again.
struct CachedResult: Sendable {
    var image: ProcessedImage
    var etag: String
    var lastModified: String?
    var expires: Date
}

/// Encoded results by key: in memory up to a byte budget (the oldest entries leave first), then
/// on disk (keyed by the result key's digest, the `ETag` and `Last-Modified` in the entry's
/// metadata, its expiry the result's time to live).
final class ResultCache: Sendable {
    enum Lookup {
        case fresh(CachedResult, ImageServiceCacheTier)
        case stale(CachedResult)
        case miss
    }

    private let memoryBytes: Int
    private let disk: DiskCache?
    private let memory = Locked((entries: [String: CachedResult](), order: [String](), bytes: 0))
    /// How long a result is fresh: its expiry minus this is when it was made.
    private let timeToLive: TimeInterval
    /// When each purged source was purged: a result of it made before is stale (revalidated
    /// against the source before it is served). Kept in `purgeLog` across restarts, for one
    /// time to live (an older result is stale anyway).
    private let purges: Locked<[String: Date]>
    private let purgeLog: URL?

    init(
        memoryBytes: Int, directory: URL?, diskLimit: Int? = nil, timeToLive: TimeInterval = 3600, purgeLog: URL? = nil
    ) {
        self.memoryBytes = memoryBytes
        self.timeToLive = timeToLive
        self.purgeLog = purgeLog
        disk = directory.flatMap {
            try? DiskCache(
                directory: $0,
                configuration: DiskCacheConfiguration(maxSize: diskLimit ?? DiskCacheConfiguration.automaticMaxSize))
        }
        purges = Locked(Self.readPurges(purgeLog, newerThan: Date().addingTimeInterval(-timeToLive)))
    }

    func get(_ key: String, source: String, now: Date = Date()) -> Lookup {
        let purgedAt = purges.withLock { $0.isEmpty ? nil : $0[source] }
        if let hit = memory.withLock({ $0.entries[key] }) {
            if let purgedAt, hit.expires.addingTimeInterval(-timeToLive) < purgedAt { return .stale(hit) }
            return hit.expires > now ? .fresh(hit, .resultMemory) : .stale(hit)
        }
        guard let disk, let (data, metadata) = disk.entry(forKey: Self.diskKey(key)),
            let format = Self.format(of: data),
            let etag = metadata?.http?.etag
        else { return .miss }
        let result = CachedResult(
            image: Self.image(data, format: format, kept: metadata?.extendedData ?? [:]), etag: etag,
            lastModified: metadata?.http?.lastModified, expires: metadata?.expiryDate ?? .distantPast)
        guard result.expires > now else { return .stale(result) }
        if let purgedAt, result.expires.addingTimeInterval(-timeToLive) < purgedAt { return .stale(result) }
        insert(key, result)
        return .fresh(result, .resultDisk)
    }

    /// Drops the results of `source` held in memory and marks every result of it made before
    /// `now` stale (those on disk, whose keys are digests, included). Returns the dropped keys.
    func purge(source: String, now: Date = Date()) -> [String] {
        let marker = "|" + source + "|"
        let dropped = memory.withLock { state -> [String] in
            let keys = state.entries.keys.filter { $0.contains(marker) }
            for key in keys { state.bytes -= state.entries.removeValue(forKey: key)?.image.data.count ?? 0 }
            if !keys.isEmpty { state.order.removeAll { key in keys.contains(key) } }
            return keys.sorted()
        }
        purges.withLock { purges in
            if purges.count >= 100_000 {
                let oldest = now.addingTimeInterval(-timeToLive)
                purges = purges.filter { $0.value > oldest }
            }
            purges[source] = now
        }
        if let purgeLog {
            // One line per purge: seconds since 1970, a tab, the source (which holds no tab or newline).
            let line = Data("\(Int(now.timeIntervalSince1970.rounded(.up)))\t\(source)\n".utf8)
            if let handle = try? FileHandle(forWritingTo: purgeLog) {
                _ = try? handle.seekToEnd()
                try? handle.write(contentsOf: line)
                try? handle.close()
            } else {
                try? line.write(to: purgeLog)
            }
        }
        return dropped
    }

    private static func readPurges(_ log: URL?, newerThan oldest: Date) -> [String: Date] {
        guard let log, let text = try? String(contentsOf: log, encoding: .utf8) else { return [:] }
        var purges: [String: Date] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 1)
            guard fields.count == 2, let seconds = Double(fields[0]) else { continue }
            let date = Date(timeIntervalSince1970: seconds)
            if date > oldest { purges[String(fields[1])] = max(date, purges[String(fields[1])] ?? date) }
        }
        // The log keeps only what is still needed.
        let kept = purges.map { "\(Int($0.value.timeIntervalSince1970.rounded(.up)))\t\($0.key)\n" }.joined()
        try? Data(kept.utf8).write(to: log, options: .atomic)
        return purges
    }

    func set(_ key: String, _ result: CachedResult) {
        insert(key, result)
        try? disk?.store(
            result.image.data, forKey: Self.diskKey(key), expiryDate: result.expires,
            http: HTTPCacheHeaders(etag: result.etag, lastModified: result.lastModified),
            extendedData: Self.kept(result.image))
    }

    private func insert(_ key: String, _ result: CachedResult) {
        let size = result.image.data.count
        guard size <= memoryBytes / 8 else { return }
        memory.withLock { state in
            if let old = state.entries.updateValue(result, forKey: key) {
                state.bytes -= old.image.data.count
            } else {
                state.order.append(key)
            }
            state.bytes += size
            while state.bytes > memoryBytes, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                state.bytes -= state.entries.removeValue(forKey: oldest)?.image.data.count ?? 0
            }
        }
    }

    /// Waits for the disk's background work (the sweep) to finish: shutdown calls it.
    func flush() { disk?.waitForBackgroundWork() }

    /// What a result keeps beside its bytes on disk: its size and frames, and autoquality's
    /// choice (the `X-ImageKit-Quality` header of a disk hit).
    static func kept(_ image: ProcessedImage) -> [String: String] {
        var kept = ["width": String(image.width), "height": String(image.height), "frames": String(image.frameCount)]
        if let choice = image.autoQuality {
            kept["aq.quality"] = String(choice.quality)
            kept["aq.encodes"] = String(choice.encodes)
            kept["aq.metric"] = choice.metric?.rawValue
            kept["aq.score"] = choice.score.map { String($0) }
        }
        return kept
    }

    /// A result read back from disk with what ``kept(_:)`` stored (zeros for an entry written
    /// before it was kept).
    static func image(_ data: Data, format: ImageOperations.Format, kept: [String: String]) -> ProcessedImage {
        var image = ProcessedImage(
            data: data, format: format, width: kept["width"].flatMap(Int.init) ?? 0,
            height: kept["height"].flatMap(Int.init) ?? 0, frameCount: kept["frames"].flatMap(Int.init) ?? 1)
        if let quality = kept["aq.quality"].flatMap(Int.init), let encodes = kept["aq.encodes"].flatMap(Int.init) {
            image.autoQuality = AutoQualityChoice(
                quality: quality, metric: kept["aq.metric"].flatMap(PerceptualMetric.init(rawValue:)),
                score: kept["aq.score"].flatMap(Double.init), encodes: encodes)
        }
        return image
    }

    static func diskKey(_ key: String) -> String {
        "result:" + SHA256.hash(data: Data(key.utf8)).hexString
    }

    static func format(of data: Data) -> ImageOperations.Format? {
        ImageOperations.Format(ImageSignature(data).format)
    }
}
