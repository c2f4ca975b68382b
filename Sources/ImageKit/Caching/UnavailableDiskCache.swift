import Foundation

/// A disk layer that holds nothing: what ``ImageManager/shared`` uses when its cache directory
/// cannot be created (a read-only home, no `$HOME`). Reads miss; writes fail with `ioError`,
/// which the manager reports without failing the load.
package struct UnavailableDiskCache: ImageDiskCaching {
    package init() {}
    package func data(forKey key: String) -> Data? { nil }
    package func metadata(forKey key: String) -> DiskCacheMetadata? { nil }
    package func store(_ data: Data, forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?) throws(ImageError)
    {
        throw ImageError(.ioError, "no disk cache: its directory could not be created")
    }
    package func refresh(forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?) -> Bool { false }
    package func contains(_ key: String) -> Bool { false }
    package func remove(_ key: String) {}
    package func removeAll() {}
    package func removeExpired() -> DiskCacheSweepReport { DiskCacheSweepReport(skipped: true) }
    package var totalSize: Int { 0 }
    package var count: Int { 0 }
}
