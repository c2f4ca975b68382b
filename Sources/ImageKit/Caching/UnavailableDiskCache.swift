import Foundation

/// A disk layer that holds nothing: what ``ImageManager/shared`` uses when its cache directory
/// cannot be created (a read-only home, no `$HOME`). Reads miss; writes fail with `ioError`,
/// which the manager reports without failing the load.
struct UnavailableDiskCache: ImageDiskCaching {
    func data(forKey key: String) -> Data? { nil }
    func metadata(forKey key: String) -> DiskCacheMetadata? { nil }
    func store(_ data: Data, forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?) throws(ImageError) {
        throw ImageError(.ioError, "no disk cache: its directory could not be created")
    }
    func refresh(forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?) -> Bool { false }
    func contains(_ key: String) -> Bool { false }
    func remove(_ key: String) {}
    func removeAll() {}
    func removeExpired() -> DiskCacheSweepReport { DiskCacheSweepReport(skipped: true) }
    var totalSize: Int { 0 }
    var count: Int { 0 }
}
