/// The few ISO base media boxes ImageKit reads itself.
enum BMFFBoxes {
    /// A box: its type, where it starts, where its content starts and where it ends.
    struct Box {
        var type: String
        var start: Int
        var contentStart: Int
        var end: Int
    }

    /// The boxes directly inside `range` of `bytes`; stops at the first malformed header (libavif
    /// reports such a file itself).
    static func boxes(in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [Box] {
        var result: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            var size = Int(readUInt32(bytes, offset))
            var header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound else { break }
                let large = UInt64(readUInt32(bytes, offset + 8)) << 32 | UInt64(readUInt32(bytes, offset + 12))
                guard large <= UInt64(Int.max) else { break }
                size = Int(large)
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, size <= range.upperBound - offset else { break }
            let type = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset + 4..<offset + 8]), as: UTF8.self)
            result.append(Box(type: type, start: offset, contentStart: offset + header, end: offset + size))
            offset += size
        }
        return result
    }

    /// The content of the file's top-level `meta` box (a HEIF/AVIF item list), or nil.
    static func metaContent(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let meta = boxes(in: bytes, 0..<bytes.count).first(where: { $0.type == "meta" }) else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[meta.contentStart..<meta.end])
    }

    /// Whether the file's `meta` box may declare a `grid` item: its four letters appear in it (an
    /// `infe` names its item type so). False means no grid for certain; true may be a name that
    /// happens to hold them, which only costs the caller its closer look.
    static func mayHaveGridItem(_ bytes: UnsafeRawBufferPointer) -> Bool {
        metaContent(bytes).map { ByteSearch.contains(gridType, in: $0) } ?? false
    }

    private static let gridType = Array("grid".utf8)

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }
}
