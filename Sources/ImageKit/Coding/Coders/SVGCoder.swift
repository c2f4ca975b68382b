#if SVG
internal import CRSVG
import Foundation

/// SVG rendering with librsvg (and cairo): the document drawn straight at the size asked for.
///
/// The intrinsic size is the root's `width` and `height` in CSS pixels (96 dpi), else its
/// `viewBox` (scaled to a lone `width` or `height`), else ``defaultSize``, 300 × 150 (the CSS
/// default for a replaced element without a size, as browsers draw such an `<img>`). A thumbnail
/// draws the vector at the thumbnail size, larger or smaller than its own, and a scale-down limit
/// at the size that fits it — never large and then shrunk — and
/// the decoding limits apply to the pixels drawn, so a 20000-unit icon thumbnails at 256 px while
/// its full-size decode is refused.
///
/// Untrusted documents are safe to hand it:
/// - the document is parsed from bytes with no base file or URL, so librsvg resolves no `href`,
///   XInclude or external entity: no file is read and no connection made from inside a document
///   (`data:` URLs, which carry their bytes, are drawn);
/// - entity expansion is bounded before libxml2 sees the document: the bytes all internal
///   entities would add are counted from the DTD (``maxEntityExpansionBytes``), which catches
///   the quadratic blow-up (one large entity referenced many times) libxml2 2.9 lets through
///   as well as the billion laughs; parameter entities and entity references in attribute
///   defaults are refused. Within the budget the entities are expanded by ImageKit and the
///   DOCTYPE removed, so libxml2 never parses an entity declaration (librsvg 2.54 leaks their
///   values);
/// - the pixels drawn are checked against the limits before anything is allocated, and librsvg
///   may hold a few more layers of that size for groups and filters, so one layer may take at
///   most half of ``DecodingLimits/maxWorkingBytes``;
/// - librsvg's own limits bound the elements it loads and references (1 M / 500 k). librsvg 2.54
///   cannot be interrupted while it draws: drawing time is bounded by those limits and the
///   pixel count, not by a clock.
///
/// Decode only, one frame, `format` `.svg`. Built with the `SVG` package trait.
public struct SVGCoder: ImageDecoding {
    /// The size of a document with neither `width`/`height` nor a `viewBox`.
    public static let defaultSize = PixelSize(width: 300, height: 150)
    /// The most bytes the DTD's internal entities may add to a document when expanded.
    public static let maxEntityExpansionBytes = 4 << 20

    /// The SVG decoder (librsvg).
    public init() {}

    /// True for SVG.
    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .svg }

    /// Draws the document at its intrinsic size, or at the size the options ask for.
    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in try Self.decode(bytes, options: options) }
    }

    /// The document's intrinsic size (what ``decode(_:options:)`` draws without options), read
    /// by parsing it without drawing anything; nil when it cannot be parsed.
    static func intrinsicSize(_ bytes: UnsafeRawBufferPointer) -> PixelSize? {
        func measure(_ bytes: UnsafeRawBufferPointer) -> PixelSize? {
            guard let base = bytes.baseAddress, bytes.count > 0, let handle = try? open(base, bytes.count) else {
                return nil
            }
            defer { g_object_unref(UnsafeMutableRawPointer(handle)) }
            return intrinsicSize(handle)
        }
        guard bytes.count > 0 else { return nil }
        let expanded: [UInt8]?
        do {
            expanded = try SVGEntityBudget.expandedDocument(bytes, limit: maxEntityExpansionBytes)
        } catch {
            return nil
        }
        if let expanded { return Data(expanded).withUnsafeBytes { measure($0) } }
        return measure(bytes)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        guard bytes.count > 0 else { throw ImageError(.emptyData, "the SVG data is empty") }
        if let expanded = try SVGEntityBudget.expandedDocument(bytes, limit: maxEntityExpansionBytes) {
            return try Data(expanded).withImageBytes { bytes throws(ImageError) in try draw(bytes, options: options) }
        }
        return try draw(bytes, options: options)
    }

    /// Draws a document with no internal entities left.
    private static func draw(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the SVG data is empty")
        }
        let handle = try open(base, bytes.count)
        defer { g_object_unref(UnsafeMutableRawPointer(handle)) }
        let intrinsic = intrinsicSize(handle)
        let target = DecodeTarget.size(for: intrinsic, options: options, upscales: true)
        try options.limits.check(width: target.width, height: target.height)
        let layer = target.pixelCount.multipliedReportingOverflow(by: 4)
        guard !layer.overflow, layer.partialValue <= max(options.limits.maxWorkingBytes / 2, 4 << 20) else {
            throw ImageError(
                .decompressionBomb,
                "SVG: drawing \(target.width)x\(target.height) needs more working memory than the limits allow")
        }
        let bitmap = try CairoCanvas.draw(size: target, background: .transparent) { context throws(ImageError) in
            var viewport = RsvgRectangle(x: 0, y: 0, width: Double(target.width), height: Double(target.height))
            var error: UnsafeMutablePointer<GError>?
            if rsvg_handle_render_document(handle, context, &viewport, &error) == 0 {
                throw failure(error, "drawing the document")
            }
        }
        return DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .svg)
    }

    /// The document's size in CSS pixels: see ``SVGCoder``.
    static func intrinsicSize(_ handle: UnsafeMutablePointer<RsvgHandle>) -> PixelSize {
        var width = 0.0, height = 0.0
        if rsvg_handle_get_intrinsic_size_in_pixels(handle, &width, &height) != 0, width > 0, height > 0 {
            return pixels(width, height)
        }
        var hasWidth: gboolean = 0, hasHeight: gboolean = 0, hasViewBox: gboolean = 0
        var givenWidth = RsvgLength(), givenHeight = RsvgLength()
        var viewBox = RsvgRectangle()
        rsvg_handle_get_intrinsic_dimensions(
            handle, &hasWidth, &givenWidth, &hasHeight, &givenHeight, &hasViewBox, &viewBox)
        guard hasViewBox != 0, viewBox.width > 0, viewBox.height > 0 else { return defaultSize }
        let aspect = viewBox.width / viewBox.height
        if hasWidth != 0, let width = cssPixels(givenWidth) { return pixels(width, width / aspect) }
        if hasHeight != 0, let height = cssPixels(givenHeight) { return pixels(height * aspect, height) }
        return pixels(viewBox.width, viewBox.height)
    }

    /// An absolute length in CSS pixels (96 per inch); nil for a percentage.
    private static func cssPixels(_ length: RsvgLength) -> Double? {
        let perUnit: Double
        switch length.unit {
        case RSVG_UNIT_PX: perUnit = 1
        case RSVG_UNIT_IN: perUnit = 96
        case RSVG_UNIT_CM: perUnit = 96 / 2.54
        case RSVG_UNIT_MM: perUnit = 96 / 25.4
        case RSVG_UNIT_PT: perUnit = 96.0 / 72
        case RSVG_UNIT_PC: perUnit = 16
        case RSVG_UNIT_EM: perUnit = 16
        case RSVG_UNIT_EX: perUnit = 8
        default: return nil
        }
        let value = length.length * perUnit
        return value > 0 && value.isFinite ? value : nil
    }

    /// Whole pixels covering a fractional size, at least 1 × 1; absurd sizes saturate so the
    /// limits refuse them.
    private static func pixels(_ width: Double, _ height: Double) -> PixelSize {
        func side(_ value: Double) -> Int { value.isFinite ? Int(min(max(value.rounded(.up), 1), 1e9)) : 1_000_000_000 }
        return PixelSize(width: side(width), height: side(height))
    }

    private static func open(_ base: UnsafeRawPointer, _ count: Int) throws(ImageError) -> UnsafeMutablePointer<
        RsvgHandle
    > {
        var error: UnsafeMutablePointer<GError>?
        // From bytes, with no base file: librsvg then resolves no reference to another resource.
        guard let handle = rsvg_handle_new_from_data(base.assumingMemoryBound(to: guint8.self), gsize(count), &error)
        else {
            throw failure(error, "reading the document")
        }
        rsvg_handle_set_dpi(handle, 96)
        return handle
    }

    private static func failure(_ error: UnsafeMutablePointer<GError>?, _ what: String) -> ImageError {
        defer { if let error { g_error_free(error) } }
        let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "unknown error"
        return ImageError(.badImageData, "SVG \(what): \(message)")
    }
}
#endif
