/// What ImageKit needs from a JPEG's marker segments before decoding: the EXIF orientation, the
/// Adobe APP14 transform (inverted CMYK), and the frame type (to name unsupported variants).
struct JPEGMarkers {
    var orientation: ImageOrientation? { exifOrientation ?? xmpOrientation }
    var exifOrientation: ImageOrientation?
    var xmpOrientation: ImageOrientation?
    var hasAdobeMarker = false
    /// SOF marker number (0xC0 ... 0xCF) of the first frame header, if one was seen.
    var frameMarker: UInt8?
    var precision: Int?

    /// Walks segments from SOI up to the first SOS, never reading past `bytes`.
    init(_ bytes: UnsafeRawBufferPointer) {
        var offset = 2
        let count = bytes.count
        while offset + 4 <= count {
            guard bytes[offset] == 0xFF else {
                offset += 1 // junk between segments: resynchronise on the next 0xFF
                continue
            }
            let marker = bytes[offset + 1]
            if marker == 0xFF { offset += 1; continue }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { offset += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return }
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length >= 2 else { return }
            let payloadStart = offset + 4
            let payloadEnd = min(offset + 2 + length, count)
            let payload = UnsafeRawBufferPointer(rebasing: bytes[payloadStart..<max(payloadStart, payloadEnd)])
            switch marker {
            case 0xE1:
                let xmpPrefix = Array("http://ns.adobe.com/xap/1.0/".utf8)
                if payload.count > xmpPrefix.count, payload.prefix(xmpPrefix.count).elementsEqual(xmpPrefix) {
                    if xmpOrientation == nil { xmpOrientation = ExifReader.orientation(xmp: payload) }
                } else if exifOrientation == nil {
                    exifOrientation = ExifReader.orientation(exifPayload: payload)
                }
            case 0xEE:
                if payload.count >= 5, payload[0] == 0x41, payload[1] == 0x64, payload[2] == 0x6F,
                   payload[3] == 0x62, payload[4] == 0x65 { // "Adobe"
                    hasAdobeMarker = true
                }
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC, 0xF7:
                if frameMarker == nil {
                    frameMarker = marker
                    if payload.count >= 1 { precision = Int(payload[0]) }
                }
            default:
                break
            }
            offset += 2 + length
        }
    }

    /// A reason ImageKit cannot decode this JPEG variant, if the frame header names one.
    var unsupportedReason: String? {
        if let precision, precision != 8 { return "\(precision)-bit JPEG is not supported by libturbojpeg 2.1" }
        switch frameMarker {
        case 0xC3, 0xC7, 0xCB, 0xCF: return "lossless JPEG (SOF\(Int(frameMarker! - 0xC0))) is not supported"
        case 0xF7: return "JPEG-LS is not supported"
        default: return nil
        }
    }
}
