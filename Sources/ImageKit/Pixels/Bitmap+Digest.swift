import Crypto

extension Bitmap {
    /// SHA-256 (lowercase hex) of the pixels as tightly packed RGBA8 rows with every fully
    /// transparent pixel written as 0,0,0,0 — the rule of the corpus manifest's `ref_sha256`.
    public func canonicalSHA256() -> String {
        var hasher = SHA256()
        hasher.update(data: packedRGBA(clearingTransparent: true))
        return hasher.finalize().map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
    }
}
