internal import CImageCodecs
internal import CTIFF
import Foundation

/// TIFF decoding with libtiff: every photometric interpretation and compression libtiff reads
/// (bilevel, gray, palette, RGB, YCbCr, CMYK, CIE Lab; none, LZW, Deflate, PackBits, CCITT G3/G4,
/// JPEG, ZSTD, WebP …), 1 to 16 bits per sample (9 to 15 read and scaled here), strips and tiles, the Orientation tag, an
/// embedded ICC profile (converted to sRGB; CMYK with a profile through Little CMS). Decode only.
///
/// The first page (directory) is decoded, as an image viewer shows it; ``ImageDecodingOptions/pages``
/// picks another page or every page (as frames of one size). 8-bit RGB(A) and gray(+alpha) strips are read as stored so
/// that unassociated alpha keeps its exact colours; everything else goes through libtiff's RGBA
/// interface (16-bit samples keep their high byte there), whose premultiplied output is turned
/// back into straight alpha.
public struct TIFFCoder: ImageCoding {
    /// The TIFF decoder (libtiff).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .tiff }
    public func canEncode(_ format: ImageFormat) -> Bool { false }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in try Self.decode(bytes, options: options) }
    }

    /// Throws `encodingFailed`: ImageKit does not write TIFF.
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        throw ImageError(.encodingFailed, "ImageKit does not write TIFF")
    }

    /// The TIFF's page count (directories in the main chain), nil when the data is not TIFF.
    public static func pageCount(_ data: Data) -> Int? {
        try? data.withImageBytes { bytes throws(ImageError) in
            try TIFFFile.open(bytes) { tiff in Int(TIFFNumberOfDirectories(tiff.handle)) }
        }
    }

    /// The first page's stored size and its Orientation tag, from the directory: nothing is decoded.
    static func firstPageHeader(_ bytes: UnsafeRawBufferPointer) -> (size: PixelSize, orientation: ImageOrientation)? {
        try? TIFFFile.open(bytes) { tiff throws(ImageError) in
            let width = Int(tiff.field(UInt32(TIFFTAG_IMAGEWIDTH), UInt32.self) ?? 0)
            let height = Int(tiff.field(UInt32(TIFFTAG_IMAGELENGTH), UInt32.self) ?? 0)
            let tag = Int(tiff.field(UInt32(TIFFTAG_ORIENTATION), UInt16.self, defaulted: true) ?? 1)
            return (PixelSize(width: width, height: height), ImageOrientation(rawValue: tag) ?? .up)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        try TIFFFile.open(bytes) { tiff throws(ImageError) in
            let pageCount = Int(TIFFNumberOfDirectories(tiff.handle))
            switch options.pages {
            case .first:
                return try decodePage(tiff, options: options)
            case .page(let index):
                try tiff.select(page: index, of: pageCount)
                return try decodePage(tiff, options: options)
            case .all:
                var frames: [ImageFrame] = []
                var first: DecodedImage?
                for index in 0..<pageCount {
                    try tiff.select(page: index, of: pageCount)
                    let page = try decodePage(tiff, options: options)
                    if let first, page.bitmap.size != first.bitmap.size {
                        throw ImageError(
                            .unsupportedFormat,
                            "TIFF: page \(index) is \(page.bitmap.size), page 0 \(first.bitmap.size): "
                                + "pages of different sizes are decoded one at a time (.page(n))")
                    }
                    first = first ?? page
                    frames.append(ImageFrame(bitmap: page.bitmap))
                    try options.limits.check(width: page.bitmap.width, height: page.bitmap.height, frames: frames.count)
                }
                guard var image = first else { throw ImageError(.zeroPixels, "the TIFF has no page") }
                image.frames = frames
                return image
            }
        }
    }

    /// The current page (directory), scaled, oriented and converted as the options say.
    private static func decodePage(_ tiff: TIFFFile, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        let width = Int(tiff.field(UInt32(TIFFTAG_IMAGEWIDTH), UInt32.self) ?? 0)
        let height = Int(tiff.field(UInt32(TIFFTAG_IMAGELENGTH), UInt32.self) ?? 0)
        try options.limits.checkPixels(width: width, height: height)
        let orientationTag = Int(tiff.field(UInt32(TIFFTAG_ORIENTATION), UInt16.self, defaulted: true) ?? 1)
        let orientation = ImageOrientation(rawValue: orientationTag) ?? .up
        let full = PixelSize(width: width, height: height)
        let target = DecodeTarget.storedSize(
            for: full, orientation: options.appliesOrientation ? orientation : .up,
            frames: 1, options: options)
        try options.limits.check(width: target.width, height: target.height)
        if target != full {
            try options.limits.checkWorking(
                full.pixelCount * 4, outputBytes: target.pixelCount * 4, "a \(full) TIFF decoded whole before scaling")
        } else {
            try options.limits.check(width: width, height: height)
        }
        let icc = tiff.iccProfile()
        var buffer = try PixelBuffer(width: width, height: height)
        let isOpaque = try tiff.readPixels(into: &buffer, icc: icc)
        var bitmap = buffer.freeze(isOpaque: isOpaque)
        if target != full { bitmap = try bitmap.resized(to: target) }
        var image = DecodedImage(
            frames: [ImageFrame(bitmap: bitmap)], format: .tiff, orientation: orientation,
            isOrientationApplied: orientation == .up)
        ColorManagement.apply(icc, to: &image, options: options)
        if options.appliesOrientation { image = try image.applyingOrientation() }
        return image
    }
}
