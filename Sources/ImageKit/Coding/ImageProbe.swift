import Foundation

/// An image's size and EXIF orientation read from its header, without decoding pixels: what an
/// image service plans its work from (which decode-time thumbnail to ask for).
///
/// Read for JPEG (SOF and APP1/XMP orientation), PNG (IHDR), GIF (logical screen), WebP
/// (VP8, VP8L, VP8X canvas) and TIFF (the first page's directory and Orientation tag), and in
/// builds with those traits for HEIC/HEIF and AVIF (the boxes parsed: the displayed size, the
/// file's `clap`/`irot`/`imir` applied, orientation `.up`), JPEG XL (the basic info, its
/// orientation applied) and vectors (SVG's intrinsic size, a PDF's first page at 72 dpi: the
/// document is parsed, nothing is drawn); nil for other formats and for headers it cannot read —
/// decode the image then to learn its size.
///
/// ```swift
/// if let probe = ImageProbe(data) {
///     print(probe.displayedWidth, probe.displayedHeight)   // orientation applied
/// }
/// ```
public struct ImageProbe: Sendable, Hashable {
    /// The container format.
    public var format: ImageFormat
    /// The stored size.
    public var width: Int
    /// The stored height.
    public var height: Int
    /// The EXIF (or XMP) orientation; `.up` when there is none.
    public var orientation: ImageOrientation

    /// The size once the orientation is applied (what a decode returns by default).
    public var displayedWidth: Int { orientation.swapsDimensions ? height : width }
    /// The height once the orientation is applied.
    public var displayedHeight: Int { orientation.swapsDimensions ? width : height }

    /// Reads `data`'s header; nil for formats it does not read or headers it cannot parse.
    public init?(_ data: Data) {
        guard let probe = data.withUnsafeBytes({ Self.read($0) }) else { return nil }
        self = probe
    }

    init(format: ImageFormat, width: Int, height: Int, orientation: ImageOrientation = .up) {
        self.format = format
        self.width = width
        self.height = height
        self.orientation = orientation
    }

    static func read(_ bytes: UnsafeRawBufferPointer) -> ImageProbe? {
        func u16be(_ offset: Int) -> Int { Int(bytes[offset]) << 8 | Int(bytes[offset + 1]) }
        func u16le(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        func u24le(_ offset: Int) -> Int { u16le(offset) | Int(bytes[offset + 2]) << 16 }
        func u32be(_ offset: Int) -> Int { u16be(offset) << 16 | u16be(offset + 2) }
        let probe: ImageProbe?
        let format = ImageSignature(bytes: bytes).format
        switch format {
        case .jpeg:
            let markers = JPEGMarkers(bytes)
            guard markers.frameWidth > 0, markers.frameHeight > 0 else { return nil }
            probe = ImageProbe(
                format: .jpeg, width: markers.frameWidth, height: markers.frameHeight,
                orientation: markers.orientation ?? .up)
        case .png:
            guard bytes.count >= 24 else { return nil }
            probe = ImageProbe(format: .png, width: u32be(16), height: u32be(20))
        case .gif:
            guard bytes.count >= 10 else { return nil }
            probe = ImageProbe(format: .gif, width: u16le(6), height: u16le(8))
        case .webp:
            guard bytes.count >= 30 else { return nil }
            let chunk = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[12..<16]), as: UTF8.self)
            switch chunk {
            case "VP8 ": probe = ImageProbe(format: .webp, width: u16le(26) & 0x3FFF, height: u16le(28) & 0x3FFF)
            case "VP8L":
                let bits =
                    UInt32(bytes[21]) | UInt32(bytes[22]) << 8 | UInt32(bytes[23]) << 16 | UInt32(bytes[24]) << 24
                probe = ImageProbe(format: .webp, width: Int(bits & 0x3FFF) + 1, height: Int(bits >> 14 & 0x3FFF) + 1)
            case "VP8X": probe = ImageProbe(format: .webp, width: u24le(24) + 1, height: u24le(27) + 1)
            default: probe = nil
            }
        case .tiff:
            probe = TIFFCoder.firstPageHeader(bytes).map {
                ImageProbe(format: .tiff, width: $0.size.width, height: $0.size.height, orientation: $0.orientation)
            }
        #if HEIF
        case .heic, .heif:
            // The file's own transforms (clap, irot, imir) are part of the displayed size: no
            // EXIF orientation is applied on top.
            probe = HEIFCoder.displayedSize(bytes).map {
                ImageProbe(format: format, width: $0.width, height: $0.height)
            }
        #endif
        #if AVIF
        case .avif:
            probe = AVIFCoder.displayedSize(bytes).map { ImageProbe(format: .avif, width: $0.width, height: $0.height) }
        #elseif HEIF
        case .avif:
            probe = HEIFCoder.displayedSize(bytes).map { ImageProbe(format: .avif, width: $0.width, height: $0.height) }
        #endif
        #if JXL
        case .jpegXL:
            probe = JXLCoder.displayedSize(bytes).map {
                ImageProbe(format: .jpegXL, width: $0.width, height: $0.height)
            }
        #endif
        #if SVG
        case .svg:
            probe = SVGCoder.intrinsicSize(bytes).map { ImageProbe(format: .svg, width: $0.width, height: $0.height) }
        #endif
        #if PDF
        case .pdf:
            probe = PDFCoder.firstPageSize(bytes).map { ImageProbe(format: .pdf, width: $0.width, height: $0.height) }
        #endif
        default:
            probe = nil
        }
        guard let probe, probe.width > 0, probe.height > 0 else { return nil }
        return probe
    }
}
