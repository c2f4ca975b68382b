import Foundation

/// A bounds-checked walk over a PNG's chunks (the container layer: format sniffing needs it;
/// Coding adds the ICC profile, header checks and the APNG structure in an extension).
enum PNGChunks {
    struct Chunk {
        var type: UInt32
        /// Offset of the chunk's data (after length and type) within the file.
        var dataStart: Int
        var dataCount: Int
    }

    static func tag(_ text: StaticString) -> UInt32 {
        text.withUTF8Buffer { $0.reduce(0) { $0 << 8 | UInt32($1) } }
    }

    static let IHDR = tag("IHDR"), IDAT = tag("IDAT"), IEND = tag("IEND"), PLTE = tag("PLTE")
    static let tRNS = tag("tRNS"), acTL = tag("acTL"), fcTL = tag("fcTL"), fdAT = tag("fdAT")

    static func u32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        guard offset >= 0, offset + 4 <= bytes.count else { return 0 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func u16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        guard offset >= 0, offset + 2 <= bytes.count else { return 0 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// Calls `body` for each complete chunk after the signature until it returns false, IEND
    /// is seen, or the data ends.
    static func forEach(_ bytes: UnsafeRawBufferPointer, _ body: (Chunk) -> Bool) {
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = Int(u32(bytes, offset))
            let type = u32(bytes, offset + 4)
            let dataStart = offset + 8
            guard length <= bytes.count - dataStart else { return }
            let chunk = Chunk(type: type, dataStart: dataStart, dataCount: length)
            if !body(chunk) || type == IEND { return }
            offset = dataStart + length + 4
        }
    }

    /// True when an `acTL` chunk comes before the first `IDAT` (the APNG rule).
    static func hasAnimationControl(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var found = false
        forEach(bytes) { chunk in
            if chunk.type == acTL { found = true; return false }
            return chunk.type != IDAT
        }
        return found
    }
}
