import Foundation

/// Whether a file carries an HDR gain map beside its SDR base image: what ``DecodedImage/hasGainMap``
/// reports. ImageKit decodes the base image (what such files are for on an SDR display) and reads
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
            // The primary image's XMP names the gain map (Ultra HDR, Adobe); Apple's is described only
            // in the secondary image's own XMP, which an MPF index points to.
            let markers = JPEGMarkers(bytes)
            if markers.xmpMentionsGainMap { return true }
            return markers.hasMultiPictureIndex
                && (contains(appleAuxiliaryType, in: bytes) || contains(ultraHDRNamespace, in: bytes))
        case .heic, .heif, .avif:
            guard
                let meta = BMFFBoxes.boxes(in: bytes, 0..<bytes.count).first(where: { $0.type == "meta" })
            else { return false }
            let content = UnsafeRawBufferPointer(rebasing: bytes[meta.contentStart..<meta.end])
            // `infe` version 2+: version/flags (4), item ID (2 or 4), protection index (2), item type.
            return contains(appleAuxiliaryType, in: content) || contains(Array("tmap".utf8), in: content)
        case .jpegXL:
            return BMFFBoxes.boxes(in: bytes, 0..<bytes.count).contains { $0.type == "jhgm" }
        default:
            return false
        }
    }

    static func contains(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Bool {
        ByteSearch.contains(needle, in: haystack)
    }
}
