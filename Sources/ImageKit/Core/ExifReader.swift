/// Reads the orientation tag (274) from a TIFF-structured EXIF block, bounds-checked throughout.
enum ExifReader {
    /// `bytes` starts at the TIFF header (`II*\0` or `MM\0*`), after any `Exif\0\0` prefix.
    static func orientation(tiff bytes: UnsafeRawBufferPointer) -> ImageOrientation? {
        guard bytes.count >= 8 else { return nil }
        let littleEndian: Bool
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        func u16(_ offset: Int) -> Int? {
            guard offset >= 0, offset + 2 <= bytes.count else { return nil }
            let a = Int(bytes[offset]), b = Int(bytes[offset + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }
        func u32(_ offset: Int) -> Int? {
            guard let low = u16(littleEndian ? offset : offset + 2),
                let high = u16(littleEndian ? offset + 2 : offset)
            else { return nil }
            return high << 16 | low
        }
        guard u16(2) == 42, let ifd = u32(4), let entries = u16(ifd) else { return nil }
        for index in 0..<min(entries, 512) {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry) else { return nil }
            guard tag == 0x0112 else { continue }
            guard let type = u16(entry + 2), type == 3, let value = u16(entry + 8) else { return nil }
            return ImageOrientation(rawValue: value)
        }
        return nil
    }

    /// `bytes` is an APP1 payload or a WebP `EXIF` chunk, with or without the `Exif\0\0` prefix.
    static func orientation(exifPayload bytes: UnsafeRawBufferPointer) -> ImageOrientation? {
        let prefix: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0, 0]
        if bytes.count >= 6, zip(bytes.prefix(6), prefix).allSatisfy({ $0 == $1 }) {
            return orientation(tiff: UnsafeRawBufferPointer(rebasing: bytes[6...]))
        }
        return orientation(tiff: bytes)
    }

    /// The `tiff:Orientation` of an XMP packet (attribute or element form), used when a file has
    /// no EXIF orientation (cameras and editors write either; ImageIO and Pillow read both).
    static func orientation(xmp bytes: UnsafeRawBufferPointer) -> ImageOrientation? {
        let text = Array(bytes)
        let needle = Array("tiff:Orientation".utf8)
        guard text.count > needle.count else { return nil }
        var index = 0
        while index + needle.count < text.count {
            if text[index] == needle[0] && Array(text[index..<index + needle.count]) == needle {
                // Skip `="`, `>` or whitespace to the first digit.
                var cursor = index + needle.count
                var skipped = 0
                while cursor < text.count, skipped < 8, !(0x30...0x39).contains(text[cursor]) {
                    cursor += 1
                    skipped += 1
                }
                if cursor < text.count, (0x31...0x38).contains(text[cursor]) {
                    return ImageOrientation(rawValue: Int(text[cursor] - 0x30))
                }
            }
            index += 1
        }
        return nil
    }
}
