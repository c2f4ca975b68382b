import Crypto
import Dispatch
import Foundation
import Synchronization

/// A cache of encoded image bytes on disk (SDWebImage's `SDDiskCache` protocol).
public protocol ImageDiskCaching: Sendable {
    /// The bytes stored under `key`; nil on a miss, and on an unreadable or corrupt entry.
    func data(forKey key: String) -> Data?
    /// The entry's metadata, nil when absent.
    func metadata(forKey key: String) -> DiskCacheMetadata?
    /// Stores `data` atomically, replacing any entry under `key`.
    func store(_ data: Data, forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?) throws(ImageError)
    /// Replaces the HTTP headers and expiry of an existing entry without rewriting its bytes
    /// (after a 304 Not Modified). Returns false when there is no such entry.
    @discardableResult
    func refresh(forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?) -> Bool
    /// Whether an entry for `key` exists.
    func contains(_ key: String) -> Bool
    /// Removes the entry for `key`, if any.
    func remove(_ key: String)
    /// Removes every entry.
    func removeAll()
    // Spec: CFG-04.
    /// The expiry and size sweep.
    @discardableResult
    func removeExpired() -> DiskCacheSweepReport
    /// Allocated bytes of all entries.
    var totalSize: Int { get }
    /// The number of entries.
    var count: Int { get }
}

/// One file per key under a versioned directory (`<directory>/v1/`).
///
/// File names are the SHA-256 of the key in hex, plus the key URL's path extension as SDWebImage
/// does (lookups fall back to the name without the extension). Writes go to a temporary file
/// that is renamed into place, so a reader never sees half an entry; a file that is unreadable,
/// truncated or deleted behind the cache's back is a miss. The allocated size is kept in an
/// index built by one scan at open and updated on every store and removal, so stores never walk
/// the directory. Several processes may share a directory: sweeps take an advisory lock, and
/// readers treat concurrent deletions as misses.
///
/// ```swift
/// let disk = try DiskCache(directory: DiskCache.defaultDirectory(namespace: "thumbnails"))
/// try disk.store(jpegData, forKey: "https://example.com/a.jpg", expiryDate: nil, http: nil)
/// let data = disk.data(forKey: "https://example.com/a.jpg")
/// ```
public final class DiskCache: ImageDiskCaching {
    /// The settings in force: an ``DiskCacheConfiguration/automaticMaxSize`` is replaced by the size it stood for at open.
    public let configuration: DiskCacheConfiguration
    /// The directory holding the entries (`<directory>/v1`).
    public let entriesDirectory: String
    let metadataDirectory: String
    private let clock: @Sendable () -> Date
    let index = Locked(EntryIndex())
    private let usesSidecars: Atomic<Bool>
    private let sweepQueue = DispatchQueue(label: "ImageKit.DiskCache.sweep", qos: .utility)
    // Set once in init, cancelled in deinit; DispatchSource is thread-safe but not marked Sendable.
    nonisolated(unsafe) private var timer: DispatchSourceTimer?

    /// The cache layout version: bump when the file format changes, so old layouts are ignored.
    public static let layoutVersion = "v1"

    /// `$XDG_CACHE_HOME/ImageKit/<namespace>` (or `~/.cache/ImageKit/<namespace>`).
    public static func defaultDirectory(namespace: String = "default") -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache")
        return base.appendingPathComponent("ImageKit").appendingPathComponent(namespace)
    }

    /// Opens (creating if needed) a cache in `directory`.
    ///
    /// - Parameters:
    ///   - directory: where the entries live; created if missing.
    ///   - configuration: the limits and sweep policy.
    /// - Parameter clock: the current time, injectable for tests.
    public init(
        directory: URL, configuration: DiskCacheConfiguration = DiskCacheConfiguration(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(ImageError) {
        var configuration = configuration
        self.entriesDirectory = directory.appendingPathComponent(Self.layoutVersion).path
        self.metadataDirectory = entriesDirectory + "/meta"
        self.clock = clock
        self.usesSidecars = Atomic(configuration.metadataStorage == .sidecarFiles)
        try DiskFiles.createDirectory(entriesDirectory)
        if configuration.maxSize < 0 {
            var info = statvfs()
            let free = statvfs(entriesDirectory, &info) == 0 ? Int(info.f_bavail) * Int(info.f_frsize) : 0
            configuration.maxSize = DiskCacheConfiguration.automaticMaxSize(freeBytes: free)
        }
        self.configuration = configuration
        index.withLock { $0.isScanning = true }
        sweepQueue.async { [weak self] in
            guard let self else { return }
            if self.configuration.sweepsAtOpen { self.removeExpired() } else { self.rescan() }
        }
        if let interval = configuration.sweepInterval, interval > 0 {
            let source = DispatchSource.makeTimerSource(queue: sweepQueue)
            source.schedule(deadline: .now() + interval, repeating: interval)
            source.setEventHandler { [weak self] in self?.removeExpired() }
            source.resume()
            timer = source
        }
    }

    deinit {
        timer?.cancel()
    }

    /// Waits until the sweep or scan started at open (and any queued sweep) has finished.
    public func waitForBackgroundWork() {
        sweepQueue.sync {}
    }

    // MARK: Names

    /// The file name for `key`: SHA-256 hex plus `.` and the key's path extension, if it has a
    /// short, plain one.
    public static func fileName(forKey key: String) -> String {
        let digest = SHA256.hash(data: Data(key.utf8))
        var name = ""
        name.reserveCapacity(64 + 8)
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for byte in digest { bytes.append(digits[Int(byte >> 4)]); bytes.append(digits[Int(byte & 0xF)]) }
        name = String(decoding: bytes, as: UTF8.self)
        if let pathExtension = Self.pathExtension(ofKey: key) { name += "." + pathExtension }
        return name
    }

    static func pathExtension(ofKey key: String) -> String? {
        let path = URL(string: key)?.path ?? key
        guard let lastComponent = path.split(separator: "/").last, let dot = lastComponent.lastIndex(of: ".") else {
            return nil
        }
        let candidate = lastComponent[lastComponent.index(after: dot)...]
        // NAME_MAX (255) minus the 64 hex digits and the dot, like SDWebImage's length rule; and
        // only characters that are safe in any file name.
        guard !candidate.isEmpty, candidate.count <= 255 - 65,
            candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { return nil }
        return String(candidate)
    }

    /// The path an entry for `key` is stored at.
    public func path(forKey key: String) -> String {
        entriesDirectory + "/" + Self.fileName(forKey: key)
    }

    /// The stored file for `key`: the name with extension, else the name without it.
    private func existingName(forKey key: String) -> String? {
        let name = Self.fileName(forKey: key)
        if access(entriesDirectory + "/" + name, F_OK) == 0 { return name }
        if let dot = name.firstIndex(of: ".") {
            let bare = String(name[..<dot])
            if access(entriesDirectory + "/" + bare, F_OK) == 0 { return bare }
        }
        return nil
    }

    // MARK: Reading

    public func data(forKey key: String) -> Data? {
        entry(forKey: key)?.data
    }

    /// The bytes and metadata stored under `key`. An entry whose length disagrees with its
    /// metadata (truncated behind the cache's back) is removed and reported as a miss.
    public func entry(forKey key: String) -> (data: Data, metadata: DiskCacheMetadata?)? {
        for _ in 0..<2 {  // a rename can race with the lookup; one retry settles it
            guard let name = existingName(forKey: key) else { return nil }
            let path = entriesDirectory + "/" + name
            guard let (data, info) = (try? DiskFiles.read(path)) ?? nil else { continue }
            let metadata = readMetadata(name: name, lastAccess: info.access)
            if let metadata, metadata.byteCount != data.count || metadata.key != key {
                if metadata.key == key { removeFile(name) }  // truncated or overwritten: drop it
                return nil
            }
            if configuration.expiryDate == .accessDate { DiskFiles.touchAccess(path, date: clock()) }
            return (data, metadata)
        }
        return nil
    }

    public func metadata(forKey key: String) -> DiskCacheMetadata? {
        guard let name = existingName(forKey: key),
            let info = DiskFiles.stat(entriesDirectory + "/" + name)
        else { return nil }
        return readMetadata(name: name, lastAccess: info.access)
    }

    public func contains(_ key: String) -> Bool {
        existingName(forKey: key) != nil
    }

    private func readMetadata(name: String, lastAccess: Date) -> DiskCacheMetadata? {
        if !usesSidecars.load(ordering: .relaxed),
            let bytes = DiskFiles.readAttribute(entriesDirectory + "/" + name)
        {
            return DiskCacheMetadata.decode(bytes, lastAccessDate: lastAccess)
        }
        if configuration.metadataStorage != .extendedAttributes,
            let (data, _) = (try? DiskFiles.read(metadataDirectory + "/" + name)) ?? nil
        {
            return DiskCacheMetadata.decode(Array(data), lastAccessDate: lastAccess)
        }
        return nil
    }

    // MARK: Writing

    /// Writes `data` for `key` atomically, with its expiry and HTTP headers.
    public func store(_ data: Data, forKey key: String, expiryDate: Date? = nil, http: HTTPCacheHeaders? = nil)
        throws(ImageError)
    {
        try store(data, forKey: key, expiryDate: expiryDate, http: http, extendedData: [:])
    }

    /// Stores `data` with `extendedData` kept beside it (``DiskCacheMetadata/extendedData``):
    /// what the caller needs back with the bytes, such as how they were made.
    public func store(
        _ data: Data, forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?, extendedData: [String: String]
    ) throws(ImageError) {
        let now = clock()
        var metadata = DiskCacheMetadata(
            key: key, storedDate: now, expiryDate: expiryDate ?? http?.expiryDate(receivedAt: now),
            byteCount: data.count, http: http)
        metadata.extendedData = extendedData
        let encoded = metadata.encoded()
        let name = Self.fileName(forKey: key)
        let sidecar = usesSidecars.load(ordering: .relaxed)
        var result: (DiskFiles.FileInfo, xattrUnsupported: Bool)
        do {
            result = try DiskFiles.writeAtomically(
                data, directory: entriesDirectory, name: name, attribute: sidecar ? nil : encoded,
                date: now, synchronize: configuration.synchronizesWrites)
        } catch  where access(entriesDirectory, F_OK) != 0 {
            // The directory was removed behind our back: recreate it once.
            try DiskFiles.createDirectory(entriesDirectory)
            result = try DiskFiles.writeAtomically(
                data, directory: entriesDirectory, name: name, attribute: sidecar ? nil : encoded,
                date: now, synchronize: configuration.synchronizesWrites)
        }
        if result.xattrUnsupported {
            guard configuration.metadataStorage == .automatic else {
                removeFile(name)
                throw ImageError(
                    .ioError, "the file system at \(entriesDirectory) does not support extended attributes")
            }
            usesSidecars.store(true, ordering: .relaxed)
        }
        if sidecar || result.xattrUnsupported {
            try DiskFiles.createDirectory(metadataDirectory)
            try DiskFiles.writeSmallFile(encoded, directory: metadataDirectory, name: name)
        }
        let over = index.withLock { index -> Bool in
            index.set(name, size: result.0.allocated)
            return configuration.maxSize > 0 && index.total > configuration.maxSize
        }
        if over { sweepQueue.async { [weak self] in self?.removeExpired() } }
    }

    @discardableResult
    public func refresh(forKey key: String, expiryDate: Date?, http: HTTPCacheHeaders?) -> Bool {
        guard let name = existingName(forKey: key), let info = DiskFiles.stat(entriesDirectory + "/" + name),
            var metadata = readMetadata(name: name, lastAccess: info.access)
        else { return false }
        let now = clock()
        metadata.http = http ?? metadata.http
        metadata.expiryDate = expiryDate ?? http?.expiryDate(receivedAt: now)
        let encoded = metadata.encoded()
        if !usesSidecars.load(ordering: .relaxed) {
            let descriptor = open(entriesDirectory + "/" + name, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            return encoded.withUnsafeBytes { ik_fsetxattr_bridge(descriptor, $0) } == 0
        }
        return (try? DiskFiles.writeSmallFile(encoded, directory: metadataDirectory, name: name)) != nil
    }

    // MARK: Removing

    public func remove(_ key: String) {
        let name = Self.fileName(forKey: key)
        removeFile(name)
        if let dot = name.firstIndex(of: ".") { removeFile(String(name[..<dot])) }
    }

    func removeFile(_ name: String) {
        DiskFiles.remove(entriesDirectory + "/" + name)
        DiskFiles.remove(metadataDirectory + "/" + name)
        index.withLock { $0.set(name, size: nil) }
    }

    /// Removes every entry, leaving the (empty) cache directory in place.
    public func removeAll() {
        for name in DiskFiles.list(entriesDirectory) where !name.hasPrefix(".") && name != "meta" {
            DiskFiles.remove(entriesDirectory + "/" + name)
        }
        for name in DiskFiles.list(metadataDirectory) { DiskFiles.remove(metadataDirectory + "/" + name) }
        index.withLock { $0.reset() }
    }

    public var totalSize: Int { index.withLock { $0.total } }
    public var count: Int { index.withLock { $0.sizes.count } }

    // MARK: Index

    /// Rebuilds the size index from a scan of the directory (no deletions).
    func rescan() {
        index.withLock { $0.beginScan() }
        var sizes: [String: Int] = [:]
        for name in DiskFiles.list(entriesDirectory) where !name.hasPrefix(".") {
            if let info = DiskFiles.stat(entriesDirectory + "/" + name), info.isRegular { sizes[name] = info.allocated }
        }
        index.withLock { $0.finishScan(sizes) }
    }

    var now: Date { clock() }
}

/// File name → allocated size, with a running total. Changes made while a scan runs are
/// replayed over the scan's result, so a store racing the scan is never lost.
struct EntryIndex {
    var sizes: [String: Int] = [:]
    var total = 0
    var isScanning = false
    var changedDuringScan: [String: Int?] = [:]

    mutating func set(_ name: String, size: Int?) {
        if let old = sizes[name] { total -= old }
        sizes[name] = size
        if let size { total += size }
        if isScanning { changedDuringScan[name] = .some(size) }
    }

    mutating func beginScan() {
        isScanning = true
        changedDuringScan = [:]
    }

    mutating func finishScan(_ scanned: [String: Int]) {
        let changes = changedDuringScan
        sizes = scanned
        total = scanned.values.reduce(0, +)
        isScanning = false
        changedDuringScan = [:]
        for (name, size) in changes { set(name, size: size) }
    }

    mutating func reset() {
        sizes = [:]
        total = 0
        if isScanning { changedDuringScan = [:] }
    }
}

private func ik_fsetxattr_bridge(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    DiskFiles.setAttribute(descriptor, bytes)
}
