import Foundation

/// Disk cache settings. Defaults follow SDWebImage: 7 days, no size limit, modification date.
public struct DiskCacheConfiguration: Sendable, Hashable {
    /// Which date ages an entry.
    public enum ExpiryDate: Sendable, Hashable {
        /// When the entry was written (default).
        case modificationDate
        /// When it was last read: ImageKit sets the access time itself on every read, since
        /// `noatime`/`relatime` mounts do not keep it.
        case accessDate
    }

    /// Where per-entry metadata lives.
    public enum MetadataStorage: Sendable, Hashable {
        /// Extended attributes, falling back to sidecar files where the file system refuses them.
        case automatic
        /// `user.imagekit.meta` extended attributes only.
        case extendedAttributes
        /// A small file per entry under `meta/`.
        case sidecarFiles
    }

    /// Entries older than this (by ``expiryDate``) are removed by a sweep; negative = never.
    public var maxAge: TimeInterval
    /// Allocated bytes above which a sweep trims the cache to half; 0 = unlimited. Default
    /// ``automaticMaxSize``: a tenth of the file system's free space when the cache opens,
    /// at least 64 MiB and at most 1 GiB — bounded on a server that runs for months, and never
    /// the reason a nearly full disk fills up.
    public var maxSize: Int
    /// Which file date a sweep compares with `maxAge`: modification (default) or last access.
    public var expiryDate: ExpiryDate
    /// Where each entry's metadata (HTTP validators, expiry) is kept.
    public var metadataStorage: MetadataStorage
    /// Run a sweep in the background when the cache opens.
    public var sweepsAtOpen: Bool
    /// Run a sweep (age, then size) periodically while the cache is open; nil = never. Default
    /// 600 s. A store that takes the cache over ``maxSize`` also starts one at once.
    public var sweepInterval: TimeInterval?
    /// fsync each entry before it becomes visible (slower; survives power loss).
    public var synchronizesWrites: Bool

    /// ``maxSize``'s default: chosen from the free space when the cache opens.
    public static let automaticMaxSize = -1

    /// The size ``automaticMaxSize`` stands for, given the free bytes of the file system.
    public static func automaticMaxSize(freeBytes: Int) -> Int {
        min(1 << 30, max(64 << 20, freeBytes / 10))
    }

    /// Settings with ImageKit's defaults: 7 days, an automatic size limit, a sweep at open and every 600 s.
    public init(
        maxAge: TimeInterval = 7 * 24 * 3600, maxSize: Int = automaticMaxSize,
        expiryDate: ExpiryDate = .modificationDate,
        metadataStorage: MetadataStorage = .automatic, sweepsAtOpen: Bool = true,
        sweepInterval: TimeInterval? = 600, synchronizesWrites: Bool = false
    ) {
        self.maxAge = maxAge
        self.maxSize = maxSize
        self.expiryDate = expiryDate
        self.metadataStorage = metadataStorage
        self.sweepsAtOpen = sweepsAtOpen
        self.sweepInterval = sweepInterval
        self.synchronizesWrites = synchronizesWrites
    }
}

/// What a sweep did.
public struct DiskCacheSweepReport: Sendable, Hashable {
    /// Another process held the sweep lock, so this sweep did nothing.
    public var skipped = false
    /// Entries removed because they were older than `maxAge`.
    public var removedExpired = 0
    /// Entries removed, oldest first, to bring the cache under `maxSize`.
    public var removedForSize = 0
    /// Entries left after the sweep.
    public var remainingCount = 0
    /// Allocated bytes left after the sweep.
    public var remainingSize = 0
    /// How long the sweep took, in seconds.
    public var duration: TimeInterval = 0
}
