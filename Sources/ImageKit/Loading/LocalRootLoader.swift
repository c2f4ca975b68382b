import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Loads `local:///PATH` URLs (imgproxy's form) from files under one root directory: the
/// source store of a service whose originals sit on a disk or a mounted volume.
///
/// No URL reaches a file outside the root: a path with a `..` component, a NUL, or one that
/// resolves (through symbolic links) outside the root is refused exactly as a missing file is,
/// with ``ImageError/Code/invalidStatusCode`` and status 404 — the caller cannot tell what
/// exists outside. The path is percent-decoded once. A response carries `ETag` (from the
/// file's size and modification time) and `Last-Modified`, so a changed file is a new version.
///
/// ```swift
/// let loaders = ImageLoadersManager()
/// loaders.add(LocalRootLoader(root: URL(fileURLWithPath: "/srv/images")))
/// let manager = ImageManager(loader: loaders)
/// let result = try await manager.loadImage(URL(string: "local:///products/42.jpg")!)
/// ```
public struct LocalRootLoader: SourceLoading {
    /// The directory every `local://` path is under.
    public let root: URL
    /// Files larger than this fail with ``ImageError/Code/responseTooLarge``; nil: no limit.
    public let maxBytes: Int?
    private let queue: DispatchQueue

    /// A loader for files under `root`, read on `queue`.
    public init(
        root: URL, maxBytes: Int? = 256 << 20,
        queue: DispatchQueue = DispatchQueue(label: "ImageKit.LocalRootLoader", attributes: .concurrent)
    ) {
        self.root = root
        self.maxBytes = maxBytes
        self.queue = queue
    }

    /// `local`.
    public var schemes: Set<String> { ["local"] }

    /// True for `local:` URLs.
    public func canLoad(_ url: URL) -> Bool { url.scheme?.lowercased() == "local" }

    /// `local:///PATH`, also written `local:/PATH`.
    public func sourceURL(_ text: String) throws(ImageError) -> URL {
        try SourceText.url(text, schemes: schemes, form: .path)
    }

    /// False: the files are on this machine already (read each time, so a file changed in place
    /// is served at once).
    public var cachesSources: Bool { false }

    /// Reads the file on the loader's queue.
    @discardableResult public func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        LocalLoadToken.read(on: queue, request, progress: progress, completion: completion) { () throws(ImageError) in
            try read(request.url)
        }
    }

    /// The file a `local:` URL names, as a path under the root's real path; nil when the URL
    /// names none there (see the type's rules).
    public func resolvedPath(for url: URL) -> String? {
        guard canLoad(url) else { return nil }
        // local:///a/b (imgproxy's form), or local://a/b with the first component as the host.
        var relative = url.path(percentEncoded: false)
        if let host = url.host(percentEncoded: false), !host.isEmpty { relative = host + "/" + relative }
        let components = relative.split(separator: "/", omittingEmptySubsequences: true)
        guard !components.isEmpty, !relative.contains("\0"), !components.contains(where: { $0 == ".." }) else {
            return nil
        }
        guard let base = Self.realPath(root.path) else { return nil }
        let candidate = base + "/" + components.joined(separator: "/")
        guard let resolved = Self.realPath(candidate), resolved.hasPrefix(base == "/" ? "/" : base + "/") else {
            return nil
        }
        return resolved
    }

    private func read(_ url: URL) throws(ImageError) -> (Data, [String: String]) {
        let notFound = ImageError(.invalidStatusCode, "no such local source", httpStatusCode: 404)
        guard let path = resolvedPath(for: url) else { throw notFound }
        // The real path was checked; not following links refuses one swapped in since.
        guard let (data, info) = try DiskFiles.read(path, followsLinks: false, maxBytes: maxBytes) else {
            throw notFound
        }
        guard !data.isEmpty else { throw ImageError(.invalidResponse, "the local source is empty") }
        let modified = info.modification.timeIntervalSince1970
        let etag = "\"\(String(data.count, radix: 16))-\(String(Int64(modified * 1e6), radix: 16))\""
        return (data, ["etag": etag, "last-modified": Self.httpDate(Int(modified.rounded(.down)))])
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for a Unix time.
    static func httpDate(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
