import Foundation

/// An image container format, recognised from the data's signature (never from a file name).
///
/// ImageKit decodes and encodes ``jpeg``, ``png`` (with APNG), ``gif``, ``webp``, ``avif``,
/// ``heic`` and ``jpegXL``; it decodes ``tiff``, ``bmp``, ``ico``, ``heif``, ``svg`` and ``pdf``
/// too. HEIF, AVIF, JPEG XL, SVG and PDF need the package traits of the same names (all but PDF
/// on by default). The other formats are
/// recognised so that callers get ``ImageError/Code/unsupportedFormat`` instead of a generic
/// "bad data" answer.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// JPEG (JFIF, EXIF).
    case jpeg
    /// PNG, and APNG when animated.
    case png
    /// GIF 87a/89a.
    case gif
    /// WebP, lossy, lossless or animated.
    case webp
    /// TIFF and BigTIFF.
    case tiff
    /// HEIC: HEIF with HEVC images.
    case heic
    /// HEIF with other codecs.
    case heif
    /// AVIF: HEIF with AV1 images, still or animated.
    case avif
    /// Windows bitmap.
    case bmp
    /// Windows icon.
    case ico
    /// PDF: its first page (or another, ``ImageDecodingOptions/pages``) rendered, with the `PDF`
    /// package trait (off by default: poppler is GPL).
    case pdf
    /// SVG, rendered with the `SVG` package trait.
    case svg
    /// JPEG XL, bare codestream or ISO BMFF container.
    case jpegXL = "jxl"
    /// No known signature, or too little data to tell.
    case unknown

    public var description: String { rawValue }

    /// The usual file extension (without the dot).
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .unknown: "bin"
        default: rawValue
        }
    }

    /// The format whose usual extension is `pathExtension` (case-insensitive), if any.
    ///
    /// Used only to pick an *output* format (for example `imagekit convert in.png out.webp`);
    /// input is always identified by ``detect(_:)``.
    public init?(fileExtension pathExtension: String) {
        switch pathExtension.lowercased() {
        case "jpg", "jpeg", "jpe": self = .jpeg
        case "png", "apng": self = .png
        case "gif": self = .gif
        case "webp": self = .webp
        case "tif", "tiff": self = .tiff
        case "heic": self = .heic
        case "heif": self = .heif
        case "avif": self = .avif
        case "bmp": self = .bmp
        case "ico": self = .ico
        case "pdf": self = .pdf
        case "svg": self = .svg
        case "jxl": self = .jpegXL
        default: return nil
        }
    }

    /// The MIME type servers use for the format.
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .tiff: "image/tiff"
        case .heic: "image/heic"
        case .heif: "image/heif"
        case .avif: "image/avif"
        case .bmp: "image/bmp"
        case .ico: "image/x-icon"
        case .pdf: "application/pdf"
        case .svg: "image/svg+xml"
        case .jpegXL: "image/jxl"
        case .unknown: "application/octet-stream"
        }
    }

    /// Whether ImageKit ships a decoder and an encoder for the format (in this build).
    public var isCodecSupported: Bool {
        switch self {
        case .jpeg, .png, .gif, .webp: true
        #if AVIF
        case .avif: true
        #endif
        #if HEIF
        case .heic: true
        #endif
        #if JXL
        case .jpegXL: true
        #endif
        default: false
        }
    }

    /// Whether ImageKit ships a decoder for the format (in this build).
    public var isDecodingSupported: Bool {
        switch self {
        case .jpeg, .png, .gif, .webp, .tiff, .bmp, .ico: true
        #if SVG
        case .svg: true
        #endif
        #if PDF
        case .pdf: true
        #endif
        #if HEIF
        case .heic, .heif: true
        #endif
        #if AVIF
        case .avif: true
        #endif
        #if JXL
        case .jpegXL: true
        #endif
        default: false
        }
    }
}

/// What the first bytes of some data say: the container format and whether it is animated.
///
/// ```swift
/// let signature = ImageSignature(data)
/// if signature.format == .png && signature.isAnimated { print("APNG") }
/// ```
public struct ImageSignature: Sendable, Hashable {
    /// The container format; ``ImageFormat/unknown`` for empty, short or unrecognised data.
    public var format: ImageFormat
    /// True for APNG (a PNG with an `acTL` chunk before its first `IDAT`) and animated WebP
    /// (VP8X animation flag). GIFs report false here: telling a still GIF from an animated one
    /// takes a parse of the whole file.
    public var isAnimated: Bool
    /// The first bytes of the data (up to 32; none for a signature made from a format): how a
    /// coder for a format ImageKit does not know (``format`` is ``ImageFormat/unknown``) tells its
    /// data in ``ImageDecoding/canDecode(_:)``. Not part of equality.
    public var leadingBytes: [UInt8] {
        withUnsafeBytes(of: head) { Array($0.prefix(headCount)) }
    }
    private var head: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var headCount = 0

    /// A signature for a format known in advance (a test, or a coder's own sniffing).
    public init(format: ImageFormat, isAnimated: Bool = false) {
        self.format = format
        self.isAnimated = isAnimated
    }

    /// Sniffs `data`. Never traps, whatever the length or content.
    public init(_ data: Data) {
        self = data.withUnsafeBytes { ImageSignature(bytes: $0) }
    }

    /// Sniffs raw bytes. Never traps, whatever the length or content.
    public init(bytes: UnsafeRawBufferPointer) {
        self = ImageSignature.sniff(bytes)
        headCount = min(bytes.count, 32)
        if headCount > 0 {
            withUnsafeMutableBytes(of: &head) {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(headCount)))
            }
        }
    }

    /// Equal format and animation flag (the leading bytes are not compared).
    public static func == (lhs: ImageSignature, rhs: ImageSignature) -> Bool {
        lhs.format == rhs.format && lhs.isAnimated == rhs.isAnimated
    }

    /// Hashes what `==` compares: the format and the animation flag.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(format)
        hasher.combine(isAnimated)
    }
}

extension ImageFormat {
    // Spec: COD-01.
    /// The format of `data` by its signature (SDWebImage's `sd_imageFormatForImageData`,
    /// without the PDF fall-through, plus AVIF, BMP, ICO and JPEG XL).
    public static func detect(_ data: Data) -> ImageFormat {
        ImageSignature(data).format
    }
}

extension ImageSignature {
    static func sniff(_ bytes: UnsafeRawBufferPointer) -> ImageSignature {
        let count = bytes.count
        guard count >= 2 else { return ImageSignature(format: .unknown) }
        func byte(_ index: Int) -> UInt8 { index < count ? bytes[index] : 0 }
        func matches(_ text: String, at offset: Int) -> Bool { matchesBytes(Array(text.utf8), at: offset) }
        func matchesBytes(_ expected: [UInt8], at offset: Int) -> Bool {
            guard offset + expected.count <= count else { return false }
            for (index, value) in expected.enumerated() where bytes[offset + index] != value { return false }
            return true
        }

        switch bytes[0] {
        case 0xFF:
            if count >= 3, byte(1) == 0xD8, byte(2) == 0xFF { return .init(format: .jpeg) }
            if byte(1) == 0x0A { return .init(format: .jpegXL) }
        case 0x89:
            if count >= 8, matches("PNG\r\n\u{1A}\n", at: 1) {
                return .init(format: .png, isAnimated: PNGChunks.hasAnimationControl(bytes))
            }
        case 0x47:
            if matches("GIF87a", at: 0) || matches("GIF89a", at: 0) { return .init(format: .gif) }
        case 0x49:
            // Classic TIFF (42) and BigTIFF (43: 64-bit offsets), little-endian.
            if count >= 4, byte(1) == 0x49, byte(2) == 0x2A || byte(2) == 0x2B, byte(3) == 0x00 {
                return .init(format: .tiff)
            }
        case 0x4D:
            if count >= 4, byte(1) == 0x4D, byte(2) == 0x00, byte(3) == 0x2A || byte(3) == 0x2B {
                return .init(format: .tiff)
            }
        case 0x52:
            if count >= 12, matches("RIFF", at: 0), matches("WEBP", at: 8) {
                // VP8X: flags byte 20, animation bit 0x02.
                let animated = count >= 21 && matches("VP8X", at: 12) && byte(20) & 0x02 != 0
                return .init(format: .webp, isAnimated: animated)
            }
        case 0x00:
            if count >= 6, byte(1) == 0, byte(2) == 0x01, byte(3) == 0, byte(4) != 0 || byte(5) != 0 {
                return .init(format: .ico)
            }
            if count >= 12, matches("ftyp", at: 4) { return .init(format: isoMediaFormat(bytes)) }
            if matchesBytes([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A], at: 0) {
                return .init(format: .jpegXL)
            }
        case 0x25:
            if matches("%PDF", at: 0) { return .init(format: .pdf) }
        case 0x42:
            if byte(1) == 0x4D, count >= 14 { return .init(format: .bmp) }
        case 0x3C:
            if containsSVGEnd(bytes) { return .init(format: .svg) }
        default:
            break
        }
        // SVG may start with whitespace or a BOM before its first '<'.
        if containsSVGEnd(bytes), startsWithMarkup(bytes) { return .init(format: .svg) }
        return .init(format: .unknown)
    }

    /// HEIC/HEIF/AVIF from an ISO-BMFF `ftyp` box: the major brand, then the compatible brands.
    private static func isoMediaFormat(_ bytes: UnsafeRawBufferPointer) -> ImageFormat {
        let boxSize = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let end = min(bytes.count, max(boxSize, 16))
        var brands: [String] = []
        var offset = 8
        while offset + 4 <= end {
            if offset != 12 {  // offset 12 is the minor version, not a brand
                brands.append(String(decoding: bytes[offset..<offset + 4], as: UTF8.self))
            }
            offset += 4
        }
        // The most specific brand decides: a `mif1` file listing `heic` is HEIC.
        if brands.contains(where: { $0 == "avif" || $0 == "avis" }) { return .avif }
        let heic: Set = ["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs"]
        if brands.contains(where: heic.contains) { return .heic }
        if brands.contains(where: { $0 == "mif1" || $0 == "msf1" || $0 == "mif2" }) { return .heif }
        return .unknown
    }

    /// SDWebImage's rule: `</svg>` within the last 100 bytes.
    private static func containsSVGEnd(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let tag = Array("</svg>".utf8)
        let start = max(0, bytes.count - 100)
        guard bytes.count - start >= tag.count else { return false }
        var index = bytes.count - tag.count
        while index >= start {
            var found = true
            for (offset, value) in tag.enumerated() where bytes[index + offset] != value {
                found = false
                break
            }
            if found { return true }
            index -= 1
        }
        return false
    }

    private static func startsWithMarkup(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for value in bytes.prefix(256) {
            switch value {
            case 0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF: continue
            case 0x3C: return true
            default: return false
            }
        }
        return false
    }
}
