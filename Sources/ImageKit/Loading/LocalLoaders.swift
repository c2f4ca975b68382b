import Foundation

/// Loads `file://` URLs from disk, with the same progress and error types as the downloader.
public struct FileLoader: ImageLoading {
    /// Reads happen here, off the caller's thread.
    let queue: DispatchQueue

    /// A loader that reads files on `queue`.
    public init(queue: DispatchQueue = DispatchQueue(label: "ImageKit.FileLoader", attributes: .concurrent)) {
        self.queue = queue
    }

    /// True for `file:` URLs.
    public func canLoad(_ url: URL) -> Bool { url.isFileURL }

    /// Reads the file on the loader's queue.
    @discardableResult
    public func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        LocalLoadToken.read(on: queue, request, progress: progress, completion: completion) { () throws(ImageError) in
            let path = request.url.path
            guard let (data, _) = try DiskFiles.read(path) else { throw ImageError(.invalidURL, "no file at \(path)") }
            guard !data.isEmpty else { throw ImageError(.invalidResponse, "\(path) is empty") }
            return (data, [:])
        }
    }
}

/// Decodes `data:` URLs (RFC 2397): base64 or percent-encoded payloads. Never cached.
public struct DataURLLoader: ImageLoading {
    /// A loader for `data:` URLs.
    public init() {}

    /// True for `data:` URLs.
    public func canLoad(_ url: URL) -> Bool { url.scheme?.lowercased() == "data" }

    /// The payload of a `data:` URL string, or nil when it is malformed.
    public static func decode(_ string: String) -> (mediaType: String, data: Data)? {
        guard string.lowercased().hasPrefix("data:"), let comma = string.firstIndex(of: ",") else { return nil }
        let header = string[string.index(string.startIndex, offsetBy: 5)..<comma]
        let payload = String(string[string.index(after: comma)...])
        let parameters = header.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let isBase64 = parameters.last?.lowercased() == "base64"
        let mediaType = parameters.first.flatMap { $0.contains("/") ? $0 : nil } ?? "text/plain"
        if isBase64 {
            let cleaned = (payload.removingPercentEncoding ?? payload).filter { !$0.isWhitespace }
            var padded = cleaned
            while padded.count % 4 != 0 { padded += "=" }
            guard let data = Data(base64Encoded: padded) else { return nil }
            return (mediaType, data)
        }
        guard let decoded = payload.removingPercentEncoding else { return nil }
        return (mediaType, Data(decoded.utf8))
    }

    /// Decodes the `data:` URL's payload.
    @discardableResult
    public func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        let token = LocalLoadToken(completion)
        guard let (mediaType, data) = Self.decode(request.url.absoluteString), !data.isEmpty else {
            token.finish(.failure(ImageError(.invalidURL, "malformed or empty data: URL")))
            return token
        }
        progress?(ImageLoadProgress(receivedBytes: Int64(data.count), expectedBytes: Int64(data.count)))
        token.finish(.success(ImageLoadResponse(url: request.url, data: data, headers: ["content-type": mediaType])))
        return token
    }
}

/// Completes exactly once: with the result, or with `cancelled` if cancelled first.
final class LocalLoadToken: ImageLoadCancellable {
    private let completion: Locked<(@Sendable (Result<ImageLoadResponse, ImageError>) -> Void)?>

    init(_ completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void) {
        self.completion = Locked(completion)
    }

    var isCancelled: Bool { completion.withLock { $0 == nil } }

    func finish(_ result: Result<ImageLoadResponse, ImageError>) {
        completion.withLock { $0.take() }?(result)
    }

    func cancel() { finish(.failure(ImageError(.cancelled, "the load was cancelled"))) }

    /// A load from this machine: `read` runs on `queue` unless the load was cancelled first; its
    /// bytes are reported as one progress step and completed with `read`'s headers.
    static func read(
        on queue: DispatchQueue, _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void,
        _ read: @escaping @Sendable () throws(ImageError) -> (Data, [String: String])
    ) -> LocalLoadToken {
        let token = LocalLoadToken(completion)
        queue.async {
            guard !token.isCancelled else { return }
            token.finish(
                Result { () throws(ImageError) -> ImageLoadResponse in
                    let (data, headers) = try read()
                    progress?(ImageLoadProgress(receivedBytes: Int64(data.count), expectedBytes: Int64(data.count)))
                    return ImageLoadResponse(url: request.url, data: data, headers: headers)
                })
        }
        return token
    }
}

/// Several loaders behind one ``ImageLoading`` (SDWebImage's `SDImageLoadersManager`): the last
/// registered loader that can load a URL wins.
public final class ImageLoadersManager: ImageLoading {
    private let loaders: Locked<[any ImageLoading]>

    /// Defaults: the curl downloader for http(s), `file://`, and `data:` URLs.
    public init(loaders: [any ImageLoading]? = nil) {
        self.loaders = Locked(loaders ?? [ImageDownloader(), FileLoader(), DataURLLoader()])
    }

    /// Adds a loader after the existing ones.
    public func add(_ loader: any ImageLoading) { loaders.withLock { $0.append(loader) } }

    /// True when any of the loaders handles `url`.
    public func canLoad(_ url: URL) -> Bool { loaders.withLock { $0 }.contains { $0.canLoad(url) } }

    /// Loads with the last loader that can load the URL.
    @discardableResult
    public func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        guard let loader = loaders.withLock({ $0 }).last(where: { $0.canLoad(request.url) }) else {
            let token = LocalLoadToken(completion)
            token.finish(.failure(ImageError(.invalidURL, "no loader for \(request.url)")))
            return token
        }
        return loader.load(request, progress: progress, completion: completion)
    }
}
