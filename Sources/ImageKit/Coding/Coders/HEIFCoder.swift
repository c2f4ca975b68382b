#if HEIF
internal import CHeif
import Foundation

/// HEIC/HEIF decoding with libheif (libde265 for HEVC): the primary image, grids (how iPhones
/// store photos), alpha, 10- and 12-bit images reduced to 8 bits, the `irot`/`imir`/`clap`
/// transforms applied by libheif (they win over an EXIF orientation stored inside, which is not
/// applied, as in browsers), and the `colr` ICC profile converted to sRGB. Decode only.
///
/// A thumbnail request is served from the file's embedded thumbnail item when that is at least
/// the requested size (as libvips does), which skips decoding the full image. Each decode uses
/// one thread: a server decodes many images at once. Built with the `HEIF` package trait.
public struct HEIFCoder: ImageCoding {
    /// The HEIF/HEIC decoder (libheif).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool {
        signature.format == .heic || signature.format == .heif
    }
    public func canEncode(_ format: ImageFormat) -> Bool { false }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        let format = ImageSignature(data).format
        return try data.withImageBytes { bytes throws(ImageError) in
            try Self.decode(bytes, format: format, options: options)
        }
    }

    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        throw ImageError(.encodingFailed, "ImageKit does not write HEIF")
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, format: ImageFormat, options: ImageDecodingOptions)
        throws(ImageError) -> DecodedImage
    {
        guard let context = heif_context_alloc() else { throw ImageError(.internalError, "libheif: out of memory") }
        defer { heif_context_free(context) }
        heif_context_set_max_decoding_threads(context, 0)
        heif_context_set_maximum_image_size_limit(context, Int32(clamping: max(1, options.limits.maxPixelsPerFrame)))
        try check(
            heif_context_read_from_memory_without_copy(context, bytes.baseAddress, bytes.count, nil), "reading the file"
        )
        var primary: OpaquePointer?
        try check(heif_context_get_primary_image_handle(context, &primary), "finding the primary image")
        guard let primary else { throw ImageError(.badImageData, "HEIF: no primary image") }
        defer { heif_image_handle_release(primary) }

        let full = PixelSize(
            width: Int(heif_image_handle_get_width(primary)), height: Int(heif_image_handle_get_height(primary)))
        try options.limits.checkPixels(width: full.width, height: full.height)
        let target = DecodeTarget.size(for: full, options: options)
        try options.limits.check(width: target.width, height: target.height)
        let icc = iccProfile(primary)

        // The embedded thumbnail, when it covers the target.
        var source = primary
        var thumbnail: OpaquePointer?
        defer { if let thumbnail { heif_image_handle_release(thumbnail) } }
        if target != full, options.thumbnailPixelSize != nil {
            let count = Int(heif_image_handle_get_number_of_thumbnails(primary))
            if count > 0 {
                var ids = [heif_item_id](repeating: 0, count: count)
                let listed = Int(heif_image_handle_get_list_of_thumbnail_IDs(primary, &ids, Int32(count)))
                for id in ids.prefix(listed) {
                    var candidate: OpaquePointer?
                    guard heif_image_handle_get_thumbnail(primary, id, &candidate).code == heif_error_Ok, let candidate
                    else { continue }
                    let width = Int(heif_image_handle_get_width(candidate)),
                        height = Int(heif_image_handle_get_height(candidate))
                    // The smallest thumbnail of the same shape that covers the target.
                    let covers =
                        (width >= height) == (full.width >= full.height) && width >= target.width
                        && height >= target.height
                    let smaller = thumbnail.map { width < Int(heif_image_handle_get_width($0)) } ?? true
                    if covers && smaller {
                        if let thumbnail { heif_image_handle_release(thumbnail) }
                        thumbnail = candidate
                    } else {
                        heif_image_handle_release(candidate)
                    }
                }
                if let thumbnail { source = thumbnail }
            }
        }
        let decodedSize =
            source == primary
            ? full
            : PixelSize(
                width: Int(heif_image_handle_get_width(source)), height: Int(heif_image_handle_get_height(source)))
        try options.limits.check(width: decodedSize.width, height: decodedSize.height)
        // libheif's own buffers: the YCbCr planes (up to 2 bytes a sample) and its RGBA image.
        let bits = Int(heif_image_handle_get_luma_bits_per_pixel(source))
        try options.limits.checkWorking(
            decodedSize.pixelCount * (bits > 8 ? 6 : 3) + decodedSize.pixelCount * 4,
            outputBytes: target.pixelCount * 4, "the \(decodedSize) HEIF image's planes")

        let hasAlpha = heif_image_handle_has_alpha_channel(source) != 0
        guard let decodeOptions = heif_decoding_options_alloc() else {
            throw ImageError(.internalError, "libheif: out of memory")
        }
        defer { heif_decoding_options_free(decodeOptions) }
        decodeOptions.pointee.convert_hdr_to_8bit = 1
        var image: OpaquePointer?
        try check(
            heif_decode_image(source, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, decodeOptions),
            "decoding")
        guard let image else { throw ImageError(.badImageData, "HEIF: the image did not decode") }
        defer { heif_image_release(image) }
        let width = Int(heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image, heif_channel_interleaved))
        var stride: Int32 = 0
        guard width > 0, height > 0, let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride)
        else {
            throw ImageError(.badImageData, "HEIF: the decoded image has no pixels")
        }
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height { buffer.row(y).update(from: plane + y * Int(stride), count: width * 4) }
        var bitmap = buffer.freeze(isOpaque: !hasAlpha)
        // The full image's target, whether the primary image or a thumbnail item was decoded.
        if bitmap.size != target { bitmap = try bitmap.resized(to: target) }
        var decoded = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: format)
        ColorManagement.apply(icc, to: &decoded, options: options)
        return decoded
    }

    /// Whether libheif sees an alpha channel on the primary image (a container parse, no
    /// decoding); false for data it cannot read.
    static func primaryImageHasAlpha(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let context = heif_context_alloc() else { return false }
        defer { heif_context_free(context) }
        guard
            heif_context_read_from_memory_without_copy(context, bytes.baseAddress, bytes.count, nil).code
                == heif_error_Ok
        else { return false }
        var primary: OpaquePointer?
        guard heif_context_get_primary_image_handle(context, &primary).code == heif_error_Ok, let primary else {
            return false
        }
        defer { heif_image_handle_release(primary) }
        return heif_image_handle_has_alpha_channel(primary) != 0
    }

    static func iccProfile(_ handle: OpaquePointer) -> Data? {
        let type = heif_image_handle_get_color_profile_type(handle)
        guard type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC else { return nil }
        let size = heif_image_handle_get_raw_color_profile_size(handle)
        guard size > 0, size < 64 << 20 else { return nil }
        var data = Data(count: size)
        let error = data.withUnsafeMutableBytes { heif_image_handle_get_raw_color_profile(handle, $0.baseAddress) }
        return error.code == heif_error_Ok ? data : nil
    }

    static func check(_ error: heif_error, _ what: String) throws(ImageError) {
        guard error.code != heif_error_Ok else { return }
        let message = error.message.map { String(cString: $0) } ?? "error \(error.code.rawValue)"
        switch error.code {
        case heif_error_Unsupported_filetype, heif_error_Unsupported_feature:
            throw ImageError(.unsupportedFormat, "HEIF \(what): \(message)")
        case heif_error_Memory_allocation_error:
            if error.subcode == heif_suberror_Security_limit_exceeded {
                throw ImageError(.decompressionBomb, "HEIF \(what): \(message)")
            }
            throw ImageError(.internalError, "HEIF \(what): \(message)")
        case heif_error_Invalid_input where error.subcode == heif_suberror_End_of_data:
            throw ImageError(.truncatedData, "HEIF \(what): \(message)")
        case heif_error_Invalid_input where error.subcode == heif_suberror_Security_limit_exceeded:
            throw ImageError(.decompressionBomb, "HEIF \(what): \(message)")
        case heif_error_Decoder_plugin_error where error.subcode == heif_suberror_Unsupported_codec:
            throw ImageError(.unsupportedFormat, "HEIF \(what): \(message)")
        default:
            throw ImageError(.badImageData, "HEIF \(what): \(message)")
        }
    }
}
#endif
