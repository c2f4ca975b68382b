import Foundation

/// What the disk cache keeps about each entry besides its bytes. Survives restarts (stored in a
/// `user.imagekit.meta` extended attribute, or a sidecar file where the file system has none).
public struct DiskCacheMetadata: Sendable, Hashable {
    /// The cache key the entry was stored under (usually the URL).
    public var key: String
    /// When the entry was written.
    public var storedDate: Date
    /// When the entry was last read (tracked explicitly in access-date mode; the file's atime).
    public var lastAccessDate: Date
    /// When the entry stops being fresh (from HTTP headers or the caller); nil = no expiry.
    public var expiryDate: Date?
    /// The entry's length in bytes; a file of another length is treated as corrupt.
    public var byteCount: Int
    /// The response headers, when the entry came from HTTP.
    public var http: HTTPCacheHeaders?
    /// What the caller keeps with the entry (SDWebImage's extended data): names and values of
    /// its own, stored and read back as they are.
    public var extendedData: [String: String] = [:]

    /// Metadata for one entry; normally made by the disk cache when it stores.
    public init(
        key: String, storedDate: Date, lastAccessDate: Date? = nil, expiryDate: Date? = nil,
        byteCount: Int, http: HTTPCacheHeaders? = nil
    ) {
        self.key = key
        self.storedDate = storedDate
        self.lastAccessDate = lastAccessDate ?? storedDate
        self.expiryDate = expiryDate
        self.byteCount = byteCount
        self.http = http
    }

    /// Whether the entry is still fresh at `date` (no expiry date means fresh).
    public func isFresh(at date: Date) -> Bool {
        guard let expiryDate else { return true }
        return date < expiryDate
    }

    // MARK: Encoding

    /// A compact line format: `name<TAB>value` per field, tabs, newlines and backslashes escaped.
    func encoded() -> [UInt8] {
        var fields: [(String, String)] = [
            ("v", "1"), ("key", key), ("stored", String(storedDate.timeIntervalSince1970)),
            ("bytes", String(byteCount)),
        ]
        if let expiryDate { fields.append(("expiry", String(expiryDate.timeIntervalSince1970))) }
        if let http {
            let headers: [(String, String?)] = [
                ("etag", http.etag), ("last-modified", http.lastModified), ("cache-control", http.cacheControl),
                ("expires", http.expires), ("date", http.date), ("content-type", http.contentType),
            ]
            fields.append(("http", "1"))
            for (name, value) in headers { if let value { fields.append((name, value)) } }
        }
        for (name, value) in extendedData.sorted(by: { $0.key < $1.key }) { fields.append(("x." + name, value)) }
        var text = ""
        for (name, value) in fields { text += Self.escape(name) + "\t" + Self.escape(value) + "\n" }
        return Array(text.utf8)
    }

    static func decode(_ bytes: [UInt8], lastAccessDate: Date?) -> DiskCacheMetadata? {
        var values: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            // Only an extended-data name can hold an escape (the fields' own names never do).
            let name = parts[0].hasPrefix("x.") ? unescape(String(parts[0])) : String(parts[0])
            values[name] = unescape(String(parts[1]))
        }
        guard values["v"] == "1", let key = values["key"], let stored = values["stored"].flatMap(Double.init),
            let byteCount = values["bytes"].flatMap(Int.init)
        else { return nil }
        var metadata = DiskCacheMetadata(
            key: key, storedDate: Date(timeIntervalSince1970: stored),
            lastAccessDate: lastAccessDate, byteCount: byteCount)
        metadata.expiryDate = values["expiry"].flatMap(Double.init).map(Date.init(timeIntervalSince1970:))
        if values["http"] != nil {
            metadata.http = HTTPCacheHeaders(
                etag: values["etag"], lastModified: values["last-modified"],
                cacheControl: values["cache-control"], expires: values["expires"],
                date: values["date"], contentType: values["content-type"])
        }
        for (name, value) in values where name.hasPrefix("x.") {
            metadata.extendedData[String(name.dropFirst(2))] = value
        }
        return metadata
    }

    private static func escape(_ value: String) -> String {
        // Most values have nothing to escape; Foundation's replacing costs microseconds each.
        guard
            value.utf8.contains(where: {
                $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n")
            })
        else {
            return value
        }
        return value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\t", with: "\\t")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func unescape(_ value: String) -> String {
        guard value.utf8.contains(UInt8(ascii: "\\")) else { return value }
        var result = ""
        var escaping = false
        for character in value {
            if escaping {
                result.append(character == "t" ? "\t" : character == "n" ? "\n" : character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}
