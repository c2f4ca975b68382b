import Foundation

/// Whether a file carries an HDR gain map beside its base image: what ``DecodedImage/hasGainMap``
/// reports, set by each coder from what it has parsed already. ImageKit decodes the base image (what such files are for on an SDR display) and reads
/// no gain map; this only says one is there.
///
/// Recognised: Ultra HDR and Adobe gain-map JPEGs (`hdrgm` XMP, ISO 21496-1), Apple's (an MPF
/// secondary image of type `urn:com:apple:photo:2020:aux:hdrgainmap`, in JPEG, or an auxiliary
/// image of that type in HEIC), AVIF and HEIF with an ISO 21496-1 `tmap` item, and JPEG XL with a
/// `jhgm` box.
enum GainMapDetection {
    static let appleAuxiliaryType = Array("urn:com:apple:photo:2020:aux:hdrgainmap".utf8)
    static let ultraHDRNamespace = Array("hdrgm:".utf8)

    static func isPresent(in bytes: UnsafeRawBufferPointer, format: ImageFormat) -> Bool {
        switch format {
        case .jpeg:
            return isPresent(in: bytes, markers: JPEGMarkers(bytes))
        case .heic, .heif, .avif:
            guard let content = BMFFBoxes.metaContent(bytes) else { return false }
            // An auxiliary image of Apple's type, or an item of type `tmap` (in its `infe`).
            return ByteSearch.contains(appleAuxiliaryType, in: content)
                || ByteSearch.contains(Array("tmap".utf8), in: content)
        case .jpegXL:
            return BMFFBoxes.boxes(in: bytes, 0..<bytes.count).contains { $0.type == "jhgm" }
        default:
            return false
        }
    }

    /// A JPEG's gain map, from the markers its decoder read: the primary image's XMP names it
    /// (Ultra HDR, Adobe), or, for Apple's, the secondary image's own XMP, which the MPF index
    /// points to (only a file with an MPF index is read past its first image's header).
    static func isPresent(in bytes: UnsafeRawBufferPointer, markers: JPEGMarkers) -> Bool {
        if xmpMentionsGainMap(markers, bytes) { return true }
        guard let index = markers.multiPictureIndex else { return false }
        return secondaryImageOffsets(bytes, index).contains { offset in
            let image = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            return xmpMentionsGainMap(JPEGMarkers(image), image)
        }
    }

    private static func xmpMentionsGainMap(_ markers: JPEGMarkers, _ bytes: UnsafeRawBufferPointer) -> Bool {
        markers.xmpRanges.contains { range in
            let xmp = UnsafeRawBufferPointer(rebasing: bytes[range])
            return ByteSearch.contains(ultraHDRNamespace, in: xmp) || ByteSearch.contains(appleAuxiliaryType, in: xmp)
        }
    }

    /// Where the images after the first start, from an MPF index (CIPA DC-007: a TIFF header, an
    /// IFD whose MPEntry tag, 0xB002, lists 16 bytes per image: attributes, size, offset from the
    /// TIFF header, two dependent-image numbers). Empty for an index it cannot read.
    static func secondaryImageOffsets(_ bytes: UnsafeRawBufferPointer, _ index: Range<Int>) -> [Int] {
        let tiff = index.lowerBound
        guard index.count >= 8 else { return [] }
        let littleEndian: Bool
        switch (bytes[tiff], bytes[tiff + 1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return []
        }
        func u16(_ offset: Int) -> Int? {
            guard offset >= tiff, offset + 2 <= index.upperBound else { return nil }
            let a = Int(bytes[offset]), b = Int(bytes[offset + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }
        func u32(_ offset: Int) -> Int? {
            guard let low = u16(littleEndian ? offset : offset + 2), let high = u16(littleEndian ? offset + 2 : offset)
            else { return nil }
            return high << 16 | low
        }
        guard let ifd = u32(tiff + 4), let count = u16(tiff + ifd) else { return [] }
        for entry in 0..<min(count, 64) {
            let at = tiff + ifd + 2 + entry * 12
            guard let tag = u16(at), tag == 0xB002 else { continue }
            guard let length = u32(at + 4), let list = u32(at + 8) else { return [] }
            return (1..<min(length / 16, 16)).compactMap { image in
                guard let offset = u32(tiff + list + image * 16 + 8), offset > 0 else { return nil }
                let start = tiff + offset
                return start + 2 <= bytes.count && bytes[start] == 0xFF && bytes[start + 1] == 0xD8 ? start : nil
            }
        }
        return []
    }
}
