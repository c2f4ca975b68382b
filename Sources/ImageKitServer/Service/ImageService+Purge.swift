import Crypto
import Foundation
import ImageKit

// The admin route: forgetting a changed source on this node and in the fleet's front caches.
extension ImageService {
    /// `POST /admin/purge`: forgets one source on this node — its bytes in the source cache, its
    /// results in memory (listed in the answer), and every result of it on disk, which is
    /// revalidated against the source (fetched again) before it is served.
    ///
    /// With ``ImageServiceConfiguration/purgeNotify``, the fleet's front caches are then asked
    /// to drop every key this node answered for the source (`frontCacheKeys`, and how many they
    /// held: `frontCacheRemoved`).
    ///
    /// - Parameters:
    ///   - body: JSON `{"source": "…"}`: the source as a URL names it (`https://…`, thumbor's bare
    ///     `host/path`, `s3://…`, `local:///…`).
    ///   - query: the request's query; `source=` there is used when the body has none (a front
    ///     door hashes on it to reach the node that owns the source).
    ///   - authorization: the `Authorization` header: `Bearer ADMIN_KEY`.
    /// - Returns: 200 with `{"source", "dropped", "tag"}` (`tag`: the `Surrogate-Key` its images
    ///   carry with ``ImageServiceConfiguration/sendsSourceTags``, for a CDN purge); 404 without ``ImageServiceConfiguration/adminKey``; 403 for a
    ///   missing or wrong key (nothing else said); 400 for a request without a usable source.
    ///
    /// ```sh
    /// curl -X POST -H "Authorization: Bearer $KEY" -d '{"source":"https://img.example.com/a.jpg"}' \
    ///     http://127.0.0.1:8080/admin/purge
    /// ```
    public func purge(body: Data, query: String? = nil, authorization: String?) async -> ImageServiceResponse {
        guard let adminTag else {
            return .error(ImageServiceError(.notFound, "no such route"))
        }
        let presented = authorization.flatMap { value -> String? in
            let parts = value.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : nil
        }
        guard let presented,
            HMAC<SHA256>.isValidAuthenticationCode(
                adminTag, authenticating: Data(presented.utf8), using: Self.adminSecret)
        else {
            return .error(ImageServiceError(.forbidden, "not allowed"))
        }
        let fromBody = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["source"] as? String
        let fromQuery = query.flatMap { query in
            query.split(separator: "&").lazy.compactMap { pair -> String? in
                guard pair.hasPrefix("source=") else { return nil }
                let value = String(pair.dropFirst(7))
                return value.removingPercentEncoding ?? value
            }.first
        }
        guard let text = fromBody ?? fromQuery, !text.isEmpty else {
            return .error(ImageServiceError(.malformedPurge, #"no source: send {"source": "…"}"#))
        }
        let source: URL
        do {
            source = try sources.resolve(ImageRequest.sourceURL(text, addsScheme: true))
        } catch {
            return .error(error)
        }
        // Purges of one source that arrive together (a fleet's front door sends the owner its
        // copy twice: the request and the broadcast) are one purge: each answers when it is done.
        let (task, started) = purgesInFlight.withLock { running -> (Task<Data, Never>, Bool) in
            if let task = running[source.absoluteString] { return (task, false) }
            let task = Task { await self.forget(source) }
            running[source.absoluteString] = task
            return (task, true)
        }
        let json = await task.value
        if started { purgesInFlight.withLock { _ = $0.removeValue(forKey: source.absoluteString) } }
        return .json(.ok, json, cacheControl: "no-store")
    }

    /// Drops `source` from every tier this node has, then from the front caches; the answer's JSON.
    func forget(_ source: URL) async -> Data {
        var dropped: [String] = []
        if let key = sources.purge(source) { dropped.append("source:" + key) }
        dropped += results.purge(source: source.absoluteString).map { "result:" + $0 }
        metrics.purged()
        var answer: [String: Any] = [
            "source": source.absoluteString, "dropped": dropped, "tag": Self.surrogateKey(source.absoluteString),
        ]
        if let frontCaches {
            let (keys, removed) = await frontCaches.purge(source: source.absoluteString)
            answer["frontCacheKeys"] = keys
            answer["frontCacheRemoved"] = removed
        }
        return (try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// The tag every image of `source` carries in `Surrogate-Key` (Fastly) and `Cache-Tag`
    /// (Cloudflare) when ``ImageServiceConfiguration/sendsSourceTags`` is on, so a CDN purges all
    /// its variants by one tag.
    static func surrogateKey(_ source: String) -> String {
        "imagekit-src-" + SHA256.hash(data: Data(source.utf8)).prefix(12).hexString
    }
}
