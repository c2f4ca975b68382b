import Foundation

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
    /// The frame header's size and each component's sampling factors (h, v).
    var frameWidth = 0
    var frameHeight = 0
    var sampling: [(h: Int, v: Int)] = []
    /// How many components the first scan carries (fewer than the frame's: a multi-scan file).
    var firstScanComponents: Int?
    /// Where the first SOS marker is.
    var firstScanOffset: Int?
    /// The `ICC_PROFILE` APP2 segments: sequence number and the profile bytes' range.
    var iccChunks: [(sequence: Int, range: Range<Int>)] = []
    /// The `MPF` APP2 segment's TIFF structure (after `MPF\0`): the index of the file's other
    /// images (a gain map, a depth map, a preview).
    var multiPictureIndex: Range<Int>?
    /// The XMP APP1 segments' payloads.
    var xmpRanges: [Range<Int>] = []

    /// Walks segments from SOI up to the first SOS, never reading past `bytes`.
    init(_ bytes: UnsafeRawBufferPointer) {
        var offset = 2
        let count = bytes.count
        while offset + 4 <= count {
            guard bytes[offset] == 0xFF else {
                offset += 1  // junk between segments: resynchronise on the next 0xFF
                continue
            }
            let marker = bytes[offset + 1]
            if marker == 0xFF { offset += 1; continue }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { offset += 2; continue }
            if marker == 0xDA {
                firstScanOffset = offset
                if offset + 4 < count { firstScanComponents = Int(bytes[offset + 4]) }
                return
            }
            if marker == 0xD9 { return }
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
                    xmpRanges.append(payloadStart..<payloadEnd)
                } else if exifOrientation == nil {
                    exifOrientation = ExifReader.orientation(exifPayload: payload)
                }
            case 0xE2:
                let iccPrefix = Array("ICC_PROFILE\0".utf8)
                if payload.count > 14, payload.prefix(12).elementsEqual(iccPrefix) {
                    iccChunks.append((Int(payload[12]), payloadStart + 14..<payloadEnd))
                } else if payload.count > 12, payload.prefix(4).elementsEqual(Array("MPF\0".utf8)) {
                    multiPictureIndex = payloadStart + 4..<payloadEnd
                }
            case 0xEE:
                if payload.count >= 5, payload[0] == 0x41, payload[1] == 0x64, payload[2] == 0x6F,
                    payload[3] == 0x62, payload[4] == 0x65
                {  // "Adobe"
                    hasAdobeMarker = true
                }
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC, 0xF7:
                if frameMarker == nil {
                    frameMarker = marker
                    if payload.count >= 1 { precision = Int(payload[0]) }
                    if payload.count >= 6 {
                        frameHeight = Int(payload[1]) << 8 | Int(payload[2])
                        frameWidth = Int(payload[3]) << 8 | Int(payload[4])
                        let components = Int(payload[5])
                        if payload.count >= 6 + 3 * components {
                            sampling = (0..<components).map { index in
                                let factors = payload[6 + 3 * index + 1]
                                return (max(1, Int(factors >> 4)), max(1, Int(factors & 0x0F)))
                            }
                        }
                    }
                }
            default:
                break
            }
            offset += 2 + length
        }
    }

    /// The embedded ICC profile: the APP2 chunks joined in sequence order; nil without one.
    func iccProfile(_ bytes: UnsafeRawBufferPointer) -> Data? {
        guard !iccChunks.isEmpty else { return nil }
        var profile = Data()
        for chunk in iccChunks.sorted(by: { $0.sequence < $1.sequence }) where chunk.range.upperBound <= bytes.count {
            profile.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[chunk.range]))
        }
        return profile
    }

    /// Progressive DCT (SOF2, SOF6, SOF10, SOF14).
    var isProgressive: Bool { [0xC2, 0xC6, 0xCA, 0xCE].contains(frameMarker ?? 0) }
    /// Arithmetic coding (SOF9 … SOF15).
    var isArithmetic: Bool { (frameMarker ?? 0) >= 0xC9 && (frameMarker ?? 0) <= 0xCF }

    /// Whether libjpeg must hold every DCT coefficient of the image at once (its "buffered
    /// image" mode): progressive files, and files whose first scan leaves components out.
    var buffersWholeImage: Bool {
        isProgressive || (firstScanComponents.map { $0 < sampling.count } ?? false)
    }

    /// 8×8 blocks of each component, padded to whole MCUs as libjpeg allocates them.
    var blocksPerComponent: [Int] {
        guard frameWidth > 0, frameHeight > 0, !sampling.isEmpty else { return [] }
        let hMax = sampling.map(\.h).max()!, vMax = sampling.map(\.v).max()!
        let mcuColumns = (frameWidth + 8 * hMax - 1) / (8 * hMax)
        let mcuRows = (frameHeight + 8 * vMax - 1) / (8 * vMax)
        return sampling.map { mcuColumns * $0.h * mcuRows * $0.v }
    }

    /// The bytes of libjpeg's whole-image coefficient arrays (64 coefficients of 2 bytes per
    /// block) in buffered-image mode; 0 for a file it decodes a row of blocks at a time.
    var coefficientBytes: Int {
        guard buffersWholeImage else { return 0 }
        return blocksPerComponent.reduce(0) { $0 + $1 * 128 }
    }

    /// The fewest bytes of entropy-coded data that can describe every block: a Huffman code is at
    /// least 1 bit, and a sequential block needs two (its DC difference and an end-of-block or
    /// coefficient); a progressive file's first DC scan needs one per block. nil for arithmetic
    /// coding, which can spend less than a bit on a block.
    var minimumScanBytes: Int? {
        guard !isArithmetic, frameWidth > 0, frameHeight > 0, !sampling.isEmpty else { return nil }
        // The blocks inside each component's own extent (a non-interleaved scan codes no padding).
        let hMax = sampling.map(\.h).max()!, vMax = sampling.map(\.v).max()!
        let blocks = sampling.reduce(0) { total, factors in
            let width = (frameWidth * factors.h + hMax - 1) / hMax, height = (frameHeight * factors.v + vMax - 1) / vMax
            return total + ((width + 7) / 8) * ((height + 7) / 8)
        }
        return (blocks * (isProgressive ? 1 : 2) + 7) / 8
    }

    /// Whether an end-of-image marker follows the first scan. 0xFF 0xD9 cannot occur inside
    /// entropy-coded data (a 0xFF there is followed by 0x00 or a restart marker), so its absence
    /// means the data was cut short; searched from the end, where it normally is (trailing
    /// bytes after it are allowed).
    func hasEndMarker(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let start = firstScanOffset else { return false }
        var index = bytes.count - 2
        while index > start {
            if bytes[index] == 0xFF && bytes[index + 1] == 0xD9 { return true }
            index -= 1
        }
        return false
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
