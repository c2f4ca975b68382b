import Crypto
import Foundation

/// A short, stable digest of a set of request headers: names compared case-insensitively,
/// order-free. Two loads whose headers differ (another `Authorization`, another tenant's
/// cookie) get different digests, so they never share a transfer, a cache entry or a
/// failed-URL entry; the headers themselves are never kept in a key.
enum RequestHeaderDigest {
    /// "" for no headers (the common case costs nothing), else 32 hex digits of SHA-256 over
    /// `name:value\n` lines sorted by lower-cased name.
    static func digest(_ headers: [String: String]) -> String {
        guard !headers.isEmpty else { return "" }
        var canonical = ""
        for (name, value) in headers.map({ ($0.key.lowercased(), $0.value) }).sorted(by: { $0 < $1 }) {
            canonical += name
            canonical += ":"
            canonical += value
            canonical += "\n"
        }
        let hash = SHA256.hash(data: Data(canonical.utf8))
        return hash.prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
