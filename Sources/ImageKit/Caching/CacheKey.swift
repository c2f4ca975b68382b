import Foundation

// Spec: TRK-03.
/// The key of a cached image, built from structured parts: the source (a URL string after the
/// key filter), an optional transformer key and an optional thumbnail specification.
///
/// ``rendered`` gives SDWebImage's string (`-<transformerKey>` and
/// `-Thumbnail({w,h},p)` inserted before the path extension). Storage uses ``identity``,
/// which cannot collide: an original whose URL happens to read like another URL's transformed
/// key still gets its own entry, and a thumbnail is never stored under the original's key.
///
/// ```swift
/// let original = CacheKey(url: URL(string: "https://cdn.example/a.png?sig=abc")!, filter: .removingQueryItems(["sig"]))
/// let thumb = original.thumbnail(width: 256, height: 256, preservesAspectRatio: true)
/// thumb.rendered   // "https://cdn.example/a-Thumbnail({256.000000,256.000000},1).png"
/// ```
public struct CacheKey: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    // Spec: DEC-03.
    /// A thumbnail decode's requested size (part of the key).
    public struct Thumbnail: Hashable, Sendable {
        /// The requested width in pixels.
        public var width: Double
        /// The requested height in pixels.
        public var height: Double
        /// Fit inside the size (true) or fill it (false).
        public var preservesAspectRatio: Bool
        /// A thumbnail size as it appears in the key.
        public init(width: Double, height: Double, preservesAspectRatio: Bool) {
            self.width = width
            self.height = height
            self.preservesAspectRatio = preservesAspectRatio
        }

        /// SDWebImage's `Thumbnail({%f,%f},%d)`.
        public var key: String {
            String(format: "Thumbnail({%f,%f},%d)", width, height, preservesAspectRatio ? 1 : 0)
        }
    }

    /// The source: the URL's absolute string, or what the key filter made of it.
    public var source: String
    /// The transformer applied to the image, if any (a pipeline's keys joined by `-`).
    public var transformerKey: String?
    /// The decode-time thumbnail size, if the image was decoded to one.
    public var thumbnail: Thumbnail?
    /// Any other decode setting that changes the pixels (a scale-down limit, kept EXIF
    /// orientation), rendered like a transformer key; nil for a plain decode.
    public var decodeVariant: String?

    /// A key for `source` (a URL string or what a key filter made of it) and its variant parts.
    public init(
        _ source: String, transformerKey: String? = nil, thumbnail: Thumbnail? = nil, decodeVariant: String? = nil
    ) {
        self.source = source
        self.transformerKey = transformerKey
        self.thumbnail = thumbnail
        self.decodeVariant = decodeVariant
    }

    /// The key of `url`'s original image: its absolute string.
    public init(_ url: URL) {
        self.init(url.absoluteString)
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    // Spec: TRK-01.
    /// The key for `url` (SDWebImage's `cacheKeyForURL`): the filter's output, or the
    /// absolute string.
    public init(url: URL?, filter: CacheKeyFilter? = nil) {
        guard let url else {
            self.init("")
            return
        }
        self.init(filter?.key(for: url) ?? url.absoluteString)
    }

    /// This key with `transformerKey` added (keys of successive transformers are joined by `-`).
    public func transformed(by key: String) -> CacheKey {
        var copy = self
        copy.transformerKey = transformerKey.map { $0 + "-" + key } ?? key
        return copy
    }

    /// This key for a thumbnail decode of the given size.
    public func thumbnail(width: Double, height: Double, preservesAspectRatio: Bool) -> CacheKey {
        var copy = self
        copy.thumbnail = Thumbnail(width: width, height: height, preservesAspectRatio: preservesAspectRatio)
        return copy
    }

    /// This key for a decode with another setting that changes the pixels.
    public func decoded(as variant: String) -> CacheKey {
        var copy = self
        copy.decodeVariant = decodeVariant.map { $0 + "-" + variant } ?? variant
        return copy
    }

    /// This key for a load sent with `headers`: their digest joins the source (so the
    /// original's key keeps it too), and an entry stored for other headers never answers.
    /// Nothing of the headers themselves is kept.
    public func varying(byRequestHeaders headers: [String: String]) -> CacheKey {
        guard !headers.isEmpty else { return self }
        var copy = self
        copy.source += Self.headersMarker + RequestHeaderDigest.digest(headers)
        return copy
    }

    /// This key for one version of a local file: an edited or replaced file gets a new key.
    func varying(byFileVersion version: FileVersion) -> CacheKey {
        var copy = self
        copy.source += Self.fileVersionMarker + version.tag
        return copy
    }

    static let headersMarker = "#imagekit-headers:"
    static let fileVersionMarker = "#imagekit-file:"

    /// The same source with no transformer, thumbnail or decode variant: the original image's key.
    public var original: CacheKey { CacheKey(source) }

    /// True for the key of the original bytes: no transformer, thumbnail or decode variant.
    public var isOriginal: Bool { transformerKey == nil && thumbnail == nil && decodeVariant == nil }

    /// SDWebImage's string form: thumbnail key, then transformer key, each inserted with `-`
    /// before the path extension (only the URL's path changes; query and fragment stay).
    public var rendered: String {
        var key = source
        if let thumbnail { key = Self.inserting(thumbnail.key, into: key) }
        if let decodeVariant { key = Self.inserting(decodeVariant, into: key) }
        if let transformerKey { key = Self.inserting(transformerKey, into: key) }
        return key
    }

    public var description: String { rendered }

    /// The string caches store under. For an original it is the source itself (so the disk
    /// file keeps the URL's extension); a variant appends an unambiguous, length-prefixed
    /// suffix as a URL fragment.
    public var identity: String {
        if isOriginal {
            // A source that itself ends like a variant suffix is escaped so it cannot collide.
            // Checked for a '#' first: Foundation's substring search costs a microsecond, and most
            // sources have no fragment (the memory-hit path computes this on every load).
            guard Self.hasFragmentMark(source), source.contains(Self.variantMarker) else { return source }
            return source + Self.variantMarker + "original"
        }
        var suffix = Self.variantMarker
        if let transformerKey { suffix += "t\(transformerKey.utf8.count):\(transformerKey);" }
        if let thumbnail {
            suffix += "n\(thumbnail.width)x\(thumbnail.height)p\(thumbnail.preservesAspectRatio ? 1 : 0);"
        }
        if let decodeVariant { suffix += "d\(decodeVariant.utf8.count):\(decodeVariant);" }
        return source + suffix
    }

    static let variantMarker = "#imagekit-variant:"

    private static func hasFragmentMark(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, Int32(UInt8(ascii: "#")), bytes.count) != nil
        }
    }

    // Spec: TRK-03.
    /// Inserts `-insertion` before the path extension of `key`. For a
    /// `scheme://authority/path?query#fragment` key only the path part changes. The string is
    /// split by hand: URLComponents re-encodes its input, so its ranges do not index the key.
    static func inserting(_ insertion: String, into key: String) -> String {
        guard let separator = key.utf8Range(of: "://"), !key.lowercased().hasPrefix("file:"),
            key[..<separator.lowerBound].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) }
            ),
            !key[..<separator.lowerBound].isEmpty
        else {
            return insertBeforeExtension(insertion, key)
        }
        let afterAuthority = key[separator.upperBound...]
        let pathStart = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? key.endIndex
        guard pathStart < key.endIndex, key[pathStart] == "/" else { return key + "-" + insertion }
        let pathEnd = key[pathStart...].firstIndex(where: { $0 == "?" || $0 == "#" }) ?? key.endIndex
        return String(key[..<pathStart]) + insertBeforeExtension(insertion, String(key[pathStart..<pathEnd]))
            + String(key[pathEnd...])
    }

    private static func insertBeforeExtension(_ insertion: String, _ path: String) -> String {
        let lastSlash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let lastComponent = path[lastSlash...]
        guard let dot = lastComponent.lastIndex(of: "."), dot != lastComponent.startIndex,
            lastComponent.index(after: dot) != lastComponent.endIndex
        else {
            return path + "-" + insertion
        }
        return String(path[..<dot]) + "-" + insertion + String(path[dot...])
    }
}

/// Turns a URL into a cache key's source (SDWebImage's cache key filter), for example to drop
/// the signature of a signed URL so every signature shares one entry.
///
/// A load with per-load request headers (``ImageLoadContext/requestHeaders``) is cached apart
/// from loads with other headers: the headers' digest joins the key. A filter made with
/// `ignoresRequestHeaders: true` says the image does not depend on them (an access token that
/// only gates the same public image), and then one entry serves every caller — including
/// callers whose headers the origin would have refused, so use it only for such images.
public struct CacheKeyFilter: Sendable {
    private let transform: @Sendable (URL) -> String
    /// Whether loads with different request headers share the key this filter makes.
    public let ignoresRequestHeaders: Bool

    /// A filter made from `transform`; `ignoresRequestHeaders: true` lets loads with different request headers share its keys.
    public init(ignoresRequestHeaders: Bool = false, _ transform: @escaping @Sendable (URL) -> String) {
        self.transform = transform
        self.ignoresRequestHeaders = ignoresRequestHeaders
    }

    /// The cache key string for `url`.
    public func key(for url: URL) -> String { transform(url) }

    /// Drops the named query items (case-sensitive), keeping the others in order.
    public static func removingQueryItems(_ names: Set<String>) -> CacheKeyFilter {
        CacheKeyFilter { url in
            guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
                let items = components.queryItems
            else { return url.absoluteString }
            let kept = items.filter { !names.contains($0.name) }
            components.queryItems = kept.isEmpty ? nil : kept
            return components.url?.absoluteString ?? url.absoluteString
        }
    }

    /// Drops the whole query string.
    public static let removingQuery = CacheKeyFilter { url in
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.query = nil
        return components.url?.absoluteString ?? url.absoluteString
    }
}

/// The identity and modification time of a local file: what makes a cached decode of it stale.
struct FileVersion: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedNanoseconds: Int64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedNanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    var tag: String { "\(device):\(inode):\(size):\(modifiedNanoseconds)" }
}
