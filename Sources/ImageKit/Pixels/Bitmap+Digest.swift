import Crypto

extension Bitmap {
    /// SHA-256 (lowercase hex) of the pixels as tightly packed RGBA8 rows with every fully
    /// transparent pixel written as 0,0,0,0 — the rule of the corpus manifest's `ref_sha256`.
    public func canonicalSHA256() -> String {
        var hasher = SHA256()
        // Row by row through one row buffer: a frame-sized copy per digest would be a large
        // allocation per animation frame for the tools that digest every frame.
        let rowBytes = width * 4
        var row = [UInt8](repeating: 0, count: rowBytes)
        for y in 0..<height {
            row.withUnsafeMutableBufferPointer { destination in
                let base = destination.baseAddress!
                UnsafeMutableRawPointer(base).copyMemory(from: baseAddress + y * bytesPerRow, byteCount: rowBytes)
                if !isOpaque {
                    for x in stride(from: 0, to: rowBytes, by: 4) where base[x + 3] == 0 {
                        base[x] = 0
                        base[x + 1] = 0
                        base[x + 2] = 0
                    }
                }
            }
            hasher.update(data: row)
        }
        return hasher.finalize().map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
    }
}
