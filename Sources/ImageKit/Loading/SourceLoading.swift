import Foundation

/// A loader that an image service takes sources from: it names its URL schemes, reads a source
/// as a request path carries it, and says which sources its configuration serves.
///
/// A scheme is one such type, registered once: ``ImageDownloader`` (`http`, `https`),
/// ``S3Loader`` (`s3`) and ``LocalRootLoader`` (`local`). An ``ImageManager`` loads through any
/// of them as through any ``ImageLoading``; a service (`ImageService`) keeps a list of them,
/// looks a source up by its scheme, refuses what ``allows(_:)`` refuses before anything is sent,
/// and puts its own source cache, deadline and identity on top.
///
/// ```swift
/// let downloader = ImageDownloader()
/// let loaders: [any SourceLoading] = [downloader, S3Loader(access: access, downloader: downloader)]
/// let text = "s3:/photos/cat.jpg"   // a proxy merged the slashes
/// let loader = loaders.first { $0.schemes.contains("s3") }!
/// let url = try loader.sourceURL(text)   // s3://photos/cat.jpg
/// ```
public protocol SourceLoading: ImageLoading {
    /// The URL schemes this loader reads, in lower case.
    var schemes: Set<String> { get }

    /// `text`, a URL with one of ``schemes`` as a request path carries it (a proxy or path
    /// normaliser may have merged its `//` into `/`), as the URL to load; throws
    /// ``ImageError/Code/invalidURL`` with the reason when it names nothing this loader can read.
    func sourceURL(_ text: String) throws(ImageError) -> URL

    /// Whether this loader's configuration serves `url` (an allowed host, a configured bucket):
    /// a service answers "not allowed" for false before anything is sent.
    func allows(_ url: URL) -> Bool

    /// Whether a copy of what this loader read is worth keeping in a source cache, and a
    /// permanent failure worth remembering: false for files already on this machine.
    var cachesSources: Bool { get }
}

extension SourceLoading {
    /// Every URL this loader can load is served.
    public func allows(_ url: URL) -> Bool { true }

    /// Sources are worth a cached copy.
    public var cachesSources: Bool { true }

    /// `text` read as `SCHEME://AUTHORITY/PATH`, with `SCHEME:/AUTHORITY/PATH` (slashes merged)
    /// read the same; it must have a host.
    public func sourceURL(_ text: String) throws(ImageError) -> URL {
        try SourceText.url(text, schemes: schemes, form: .authority)
    }
}

/// Reading a source URL as a request path carries it.
public enum SourceText {
    /// How a scheme's URLs are written.
    public enum Form: Sendable {
        /// `SCHEME://HOST/PATH`: the host is required (http, s3's bucket).
        case authority
        /// `SCHEME:///PATH`: no host, a path (imgproxy's `local:///`).
        case path
    }

    /// `text` as a URL of one of `schemes` in `form`, its `//` restored when a proxy merged it;
    /// throws ``ImageError/Code/invalidURL`` when it has another scheme, no host (in
    /// ``Form/authority``), no path, or cannot be parsed.
    public static func url(_ text: String, schemes: Set<String>, form: Form) throws(ImageError) -> URL {
        guard let colon = text.firstIndex(of: ":"), schemes.contains(text[..<colon].lowercased()) else {
            throw ImageError(.invalidURL, "not a \(schemes.sorted().joined(separator: " or ")) URL")
        }
        let scheme = text[..<colon].lowercased()
        let rest = text[text.index(after: colon)...].drop(while: { $0 == "/" })
        let normalized = scheme + (form == .authority ? "://" : ":///") + rest
        guard !rest.isEmpty,
            let url = URL(string: normalized)
                ?? URL(string: normalized.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed) ?? "")
        else {
            throw ImageError(.invalidURL, "the source is not a valid \(scheme): URL")
        }
        if form == .authority, (url.host ?? "").isEmpty {
            throw ImageError(.invalidURL, "the \(scheme): source names no host")
        }
        return url
    }

    /// Whether `host` matches one of `patterns`: a host name, or `*.example.com` for the domain
    /// and every name under it (case ignored). An empty list matches every host.
    public static func host(_ host: String, matchesAnyOf patterns: [String]) -> Bool {
        guard !patterns.isEmpty else { return true }
        let host = host.lowercased()
        return patterns.contains { pattern in
            let pattern = pattern.lowercased()
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) || host == pattern.dropFirst(2) }
            return host == pattern
        }
    }
}
