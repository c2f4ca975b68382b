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

    /// Whether every `nclx` colour box in the file's `meta` box holds primaries, transfer and
    /// matrix codes that libheif accepts. libheif 1.15 (Debian 12's) leaks the profile it
    /// allocates when `heif_image_handle_get_nclx_color_profile` meets an unknown code (fixed
    /// upstream in 1.16): a caller asks it only when this is true. A box too short to hold the
    /// three codes counts as unknown.
    static func nclxCodesAreKnown(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let meta = metaContent(bytes), meta.count >= 14 else { return true }
        var offset = 0
        while offset + 8 <= meta.count {
            // "colr" then "nclx": the box type and its colour type.
            if meta[offset] == 0x63, meta[offset + 1] == 0x6F, meta[offset + 2] == 0x6C, meta[offset + 3] == 0x72,
                meta[offset + 4] == 0x6E, meta[offset + 5] == 0x63, meta[offset + 6] == 0x6C, meta[offset + 7] == 0x78
            {
                guard offset + 14 <= meta.count else { return false }
                let primaries = Int(meta[offset + 8]) << 8 | Int(meta[offset + 9])
                let transfer = Int(meta[offset + 10]) << 8 | Int(meta[offset + 11])
                let matrix = Int(meta[offset + 12]) << 8 | Int(meta[offset + 13])
                guard knownPrimaries.contains(primaries), knownTransfers.contains(transfer),
                    knownMatrices.contains(matrix)
                else { return false }
            }
            offset += 1
        }
        return true
    }

    // The codes of ISO/IEC 23091-2 that libheif's heif_nclx_color_profile_set_* accept.
    private static let knownPrimaries: Set = [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 22]
    private static let knownTransfers: Set = [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
    private static let knownMatrices: Set = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }
}
