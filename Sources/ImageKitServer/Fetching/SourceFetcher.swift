import Crypto
import Foundation
import ImageKit

/// The service's one way to a source's bytes: the source disk cache, else the origin through
/// the loader for its scheme (the downloader's address policy, size limit, deadline and retries), one transfer per URL
/// however many requests want it at once, stored before the bytes are handed out — the next
/// request for the source (a second size of it, often moments later) must find it, not race a
/// background write to the origin. A URL the origin refused for good (a 4xx but 408 and 429) is
/// answered with the same error, without asking again, for ``failedTimeToLive``.
///
/// It is not an `ImageManager`: a source load needs none of its jobs, memory cache, decoding or
/// thread hops.
final class SourceFetcher: Sendable {
    /// A source's bytes and what the origin said about them.
    struct Fetched: Sendable {
        var data: Data
        /// The origin's caching headers (ETag, Last-Modified …), from the response or as stored.
        var http: HTTPCacheHeaders?
        /// False when the bytes came from the disk cache.
        var fromOrigin: Bool

        /// What identifies this version of the source: the origin's strong `ETag` with the
        /// length (it names the bytes exactly: no need to hash them), else a digest of the bytes.
        var identity: String {
            http?.etag.flatMap { $0.hasPrefix("\"") ? "etag:" + $0 + ":" + String(data.count) : nil }
                ?? SHA256.hash(data: data).prefix(12).hexString
        }

        /// What the bytes are, sniffed from their first bytes.
        var signature: ImageSignature { ImageSignature(data) }
    }

    /// One loader per scheme served (``ImageServiceConfiguration/sourceLoaders(through:)``).
    let loaders: [any SourceLoading]
    let disk: DiskCache?
    let failedTimeToLive: Duration
    private let failures = Locked<[String: (error: ImageError, until: ContinuousClock.Instant)]>([:])
    private let inFlight = Locked<[String: Task<Result<Fetched, ImageError>, Never>]>([:])

    init(loaders: [any SourceLoading], disk: DiskCache?, failedTimeToLive: Duration = .seconds(60)) {
        self.loaders = loaders
        self.disk = disk
        self.failedTimeToLive = failedTimeToLive
    }

    /// The loader for `url`'s scheme; nil when none is served.
    func loader(for url: URL) -> (any SourceLoading)? {
        guard let scheme = url.scheme?.lowercased() else { return nil }
        return loaders.first { $0.schemes.contains(scheme) }
    }

    /// `source` as its scheme's loader reads it (`s3:/b/k`, a proxy's merged slashes, is
    /// `s3://b/k`): what keys, tags and fetches use. A scheme no loader serves is 400.
    func resolve(_ source: URL) throws(ImageServiceError) -> URL {
        guard let loader = loader(for: source) else {
            throw ImageServiceError(
                .unsupportedScheme, "no source with the scheme '\(source.scheme ?? "")' is served here")
        }
        do {
            return try loader.sourceURL(source.absoluteString)
        } catch {
            throw .malformed(error.message)
        }
    }

    /// Whether `source`'s loader serves it (an allowed host, a configured bucket).
    func allows(_ source: URL) -> Bool { loader(for: source)?.allows(source) ?? false }

    /// The bytes of `url`: stored, or fetched (and stored) now.
    func fetch(_ url: URL) async throws(ImageError) -> Fetched {
        guard let loader = loader(for: url) else { throw ImageError(.invalidURL, "no loader for \(url)") }
        if !loader.cachesSources {
            // On this machine already: read each time (a file changed in place is served at
            // once), never copied into the source cache or remembered as failed.
            let response = try await loader.load(url)
            return Fetched(data: response.data, http: response.cacheHeaders, fromOrigin: true)
        }
        // The key the disk cache has always used for a source: its URL (what ImageManager stored
        // originals under), so caches written before stay readable.
        let key = CacheKey(url).identity
        let now = ContinuousClock.now
        if let failure = failures.withLock({ $0[key] }) {
            // The same answer as a moment ago (a CDN keeps whichever it gets), without asking.
            if failure.until > now { throw failure.error }
            failures.withLock { _ = $0.removeValue(forKey: key) }
        }
        if let disk, let entry = disk.entry(forKey: key) {
            return Fetched(data: entry.data, http: entry.metadata?.http, fromOrigin: false)
        }
        let (task, started) = inFlight.withLock { tasks -> (Task<Result<Fetched, ImageError>, Never>, Bool) in
            if let running = tasks[key] { return (running, false) }
            let task = Task { await self.download(url, key: key, with: loader) }
            tasks[key] = task
            return (task, true)
        }
        let result = await task.value
        if started { inFlight.withLock { _ = $0.removeValue(forKey: key) } }
        return try result.get()
    }

    /// Forgets `url`: its bytes in the source cache and a remembered failure. Returns the disk
    /// key it removed, if the source was stored.
    func purge(_ url: URL) -> String? {
        let key = CacheKey(url).identity
        failures.withLock { _ = $0.removeValue(forKey: key) }
        guard let disk, disk.entry(forKey: key) != nil else { return nil }
        disk.remove(key)
        return key
    }

    private func download(_ url: URL, key: String, with loader: any SourceLoading) async -> Result<Fetched, ImageError>
    {
        do {
            let response = try await loader.load(url)
            let http = response.cacheHeaders
            if let disk, !response.data.isEmpty {
                // A full disk or a failed write costs the next request a fetch, not this one its answer.
                try? disk.store(response.data, forKey: key, expiryDate: nil, http: http)
            }
            return .success(Fetched(data: response.data, http: http, fromOrigin: true))
        } catch {
            if ImageManager.blocksURL(after: error, at: .load) {
                let until = ContinuousClock.now + failedTimeToLive
                failures.withLock { failures in
                    if failures.count >= 10_000 {
                        let now = ContinuousClock.now
                        failures = failures.filter { $0.value.until > now }
                        if failures.count >= 10_000 { failures.removeAll() }
                    }
                    failures[key] = (error, until)
                }
            }
            return .failure(error)
        }
    }
}
