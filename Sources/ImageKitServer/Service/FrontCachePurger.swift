import Foundation
import ImageKit

/// A fleet's front cache (nginx, `deploy/nginx/`) keeps this node's answers under
/// `$request_uri|ACCEPT_CLASS` keys, which only the node that answered knows by source. This
/// remembers them, per source, for every image answered with 200, and after a purge asks each
/// front cache's purge location to drop them (one exact key per request: Debian's
/// ngx_cache_purge has no prefix purge), the key in `X-ImageKit-Purge-Key`.
///
/// Bounded: at most `maxKeysPerSource` keys of a source (the oldest forgotten first) and
/// `maxSources` sources (beyond, a tenth of them are forgotten); a forgotten key's entry leaves
/// the front cache when its `max-age` runs out, as before purges existed. Keys are not kept
/// across restarts.
final class FrontCachePurger: Sendable {
    let endpoints: [URL]
    private let maxKeysPerSource: Int
    private let maxSources: Int
    private let keys = Locked<[String: [String]]>([:])
    private let downloader: ImageDownloader

    init(endpoints: [URL], maxKeysPerSource: Int = 512, maxSources: Int = 100_000) {
        self.endpoints = endpoints
        self.maxKeysPerSource = maxKeysPerSource
        self.maxSources = maxSources
        // The operator's own front caches: no address policy, a short deadline, no retries.
        downloader = ImageDownloader(
            configuration: ImageDownloaderConfiguration(
                maxConcurrentDownloads: 16, timeout: 5, totalTimeout: 5, acceptableContentTypes: nil,
                maxBodySize: 64 << 10, maxRedirects: 0, retryPolicy: .none))
    }

    /// nginx's `$imagekit_accept_class` for the `Accept` it sent (its map, in the same order).
    static func acceptClass(_ accept: String?) -> String {
        let accept = accept?.lowercased() ?? ""
        if accept.utf8Contains("image/avif") { return "avif" }
        if accept.utf8Contains("image/webp") { return "webp" }
        return "other"
    }

    /// Remembers that `path` (the request URI as received) was answered for `source`.
    func record(source: String, path: String, accept: String?) {
        guard !path.contains(where: { $0 == "\r" || $0 == "\n" }) else { return }
        let key = path + "|" + Self.acceptClass(accept)
        keys.withLock { keys in
            if keys[source] == nil, keys.count >= maxSources {
                for forgotten in keys.keys.prefix(maxSources / 10) { keys[forgotten] = nil }
            }
            var list = keys[source, default: []]
            guard !list.contains(key) else { return }
            if list.count >= maxKeysPerSource { list.removeFirst() }
            list.append(key)
            keys[source] = list
        }
    }

    /// Asks every front cache to drop every key remembered for `source`; returns the keys and
    /// how many entries the caches reported removed (a key a cache does not hold answers 404).
    func purge(source: String) async -> (keys: [String], removed: Int) {
        let list = keys.withLock { $0.removeValue(forKey: source) } ?? []
        guard !list.isEmpty, !endpoints.isEmpty else { return (list, 0) }
        let downloader = self.downloader
        let removed = await withTaskGroup(of: Bool.self) { group in
            for endpoint in endpoints {
                for key in list {
                    group.addTask {
                        let request = ImageLoadRequest(url: endpoint, headers: ["X-ImageKit-Purge-Key": key])
                        return (try? await downloader.load(request)) != nil
                    }
                }
            }
            var count = 0
            for await done in group where done { count += 1 }
            return count
        }
        return (list, removed)
    }
}
