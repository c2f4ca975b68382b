#if PDF
internal import CPoppler
import Foundation

/// PDF rendering with poppler (poppler-glib, through cairo): the first page, as viewers show it.
///
/// The page's CropBox is drawn (what viewers show, not the larger MediaBox), turned by its
/// `/Rotate`, on white paper, at 72 dpi by default (1 pt = 1 px: an A4 page is 595 × 842), or at
/// the resolution that fits a thumbnail (larger or smaller than the page) or a scale-down limit,
/// drawn at that size — never large and then shrunk. ``ImageDecodingOptions/pages`` picks another page (`.page(n)` from 0), or
/// every page as the frames of one image when they share one size.
///
/// A file with only an owner password (which restricts printing or copying) opens, as in
/// poppler's tools and in viewers; one with a user password gives
/// ``ImageError/Code/encrypted``. A damaged file poppler cannot reconstruct gives
/// ``ImageError/Code/badImageData``, a truncated one ``ImageError/Code/truncatedData``. The
/// decoding limits apply to the pixels drawn, before anything is drawn. Documents are read from
/// bytes: poppler follows no link and opens no other file.
///
/// Decode only, `format` `.pdf`. Built with the `PDF` package trait, off by default: poppler is
/// GPL-2.0-or-later, so a program linking it must be distributed under the GPL.
public struct PDFCoder: ImageDecoding {
    /// The PDF decoder (poppler).
    public init() {}

    /// True for PDF.
    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .pdf }

    /// Renders the first page (or the pages the options name).
    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in try Self.decode(bytes, options: options) }
    }

    /// A PDF's page count, nil when poppler cannot open it (not a PDF, damaged, a user password).
    public static func pageCount(_ data: Data) -> Int? {
        data.withUnsafeBytes { bytes -> Int? in
            guard let document = try? open(bytes) else { return nil }
            defer { g_object_unref(UnsafeMutableRawPointer(document)) }
            return Int(poppler_document_get_n_pages(document))
        }
    }

    /// The first page's displayed size in points (its pixels at 72 dpi), read without drawing;
    /// nil when the document cannot be opened.
    static func firstPageSize(_ bytes: UnsafeRawBufferPointer) -> PixelSize? {
        guard let document = try? open(bytes) else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(document)) }
        guard poppler_document_get_n_pages(document) > 0, let page = poppler_document_get_page(document, 0) else {
            return nil
        }
        defer { g_object_unref(UnsafeMutableRawPointer(page)) }
        return try? pageSize(page, index: 0).pixels
    }

    /// A page's displayed size: the CropBox with the page's /Rotate applied, in points, and the
    /// pixels it takes at 72 dpi.
    private static func pageSize(_ page: OpaquePointer, index: Int) throws(ImageError)
        -> (width: Double, height: Double, pixels: PixelSize)
    {
        var width = 0.0, height = 0.0
        poppler_page_get_size(page, &width, &height)
        guard width.isFinite, height.isFinite, width >= 0.5, height >= 0.5 else {
            throw ImageError(.zeroPixels, "PDF: page \(index) is \(width) × \(height) pt")
        }
        func side(_ value: Double) -> Int { max(1, Int(min(value.rounded(), 1e9))) }
        return (width, height, PixelSize(width: side(width), height: side(height)))
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        let document = try open(bytes)
        defer { g_object_unref(UnsafeMutableRawPointer(document)) }
        let pageCount = Int(poppler_document_get_n_pages(document))
        guard pageCount > 0 else { throw ImageError(.zeroPixels, "PDF: the document has no page") }
        switch options.pages {
        case .first:
            return DecodedImage(
                frames: [ImageFrame(bitmap: try render(document, page: 0, options: options))], format: .pdf)
        case .page(let index):
            guard (0..<pageCount).contains(index) else {
                throw ImageError(.invalidArgument, "PDF: page \(index) of a document of \(pageCount) pages")
            }
            return DecodedImage(
                frames: [ImageFrame(bitmap: try render(document, page: index, options: options))], format: .pdf)
        case .all:
            var frames: [ImageFrame] = []
            for index in 0..<pageCount {
                let bitmap = try render(document, page: index, options: options)
                if let first = frames.first?.bitmap, first.size != bitmap.size {
                    throw ImageError(
                        .unsupportedFormat,
                        "PDF: page \(index) is \(bitmap.size), page 0 \(first.size): "
                            + "pages of different sizes are decoded one at a time (.page(n))")
                }
                frames.append(ImageFrame(bitmap: bitmap))
                try options.limits.check(width: bitmap.width, height: bitmap.height, frames: frames.count)
            }
            return DecodedImage(frames: frames, format: .pdf)
        }
    }

    /// The page drawn at its displayed size (CropBox, rotated) in points, or at the target the
    /// options give for that size.
    private static func render(_ document: OpaquePointer, page index: Int, options: ImageDecodingOptions)
        throws(ImageError) -> Bitmap
    {
        guard let page = poppler_document_get_page(document, Int32(index)) else {
            throw ImageError(.badImageData, "PDF: page \(index) cannot be read")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(page)) }
        let (width, height, natural) = try pageSize(page, index: index)
        let target = DecodeTarget.size(for: natural, options: options, upscales: true)
        try options.limits.check(width: target.width, height: target.height)
        // Paper: viewers and pdftoppm show a page on white, whatever the content leaves unpainted.
        return try CairoCanvas.draw(
            size: target, background: .white,
            scale: (Double(target.width) / width, Double(target.height) / height)
        ) { context in poppler_page_render(page, context) }
    }

    /// The document, opened from `bytes` (which must outlive it) without a password.
    private static func open(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> OpaquePointer {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the PDF data is empty")
        }
        // A file cut short has lost its trailer: `%%EOF` within the last 1024 bytes, where readers
        // look for it. poppler would rebuild the cross-references and draw what is left.
        let tail = UnsafeRawBufferPointer(rebasing: bytes[max(0, bytes.count - 1024)...])
        guard ByteSearch.contains(Array("%%EOF".utf8), in: tail) else {
            throw ImageError(.truncatedData, "PDF: the document ends early (no %%EOF)")
        }
        guard let data = g_bytes_new_static(base, gsize(bytes.count)) else {
            throw ImageError(.internalError, "glib: out of memory")
        }
        defer { g_bytes_unref(data) }
        var error: UnsafeMutablePointer<GError>?
        guard let document = poppler_document_new_from_bytes(data, nil, &error) else {
            throw failure(error)
        }
        return document
    }

    private static func failure(_ error: UnsafeMutablePointer<GError>?) -> ImageError {
        defer { if let error { g_error_free(error) } }
        let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "unknown error"
        if let error, error.pointee.domain == poppler_error_quark(),
            error.pointee.code == Int32(POPPLER_ERROR_ENCRYPTED.rawValue)
        {
            return ImageError(.encrypted, "PDF: the document needs a password (\(message))")
        }
        return ImageError(.badImageData, "PDF: \(message)")
    }
}
#endif
