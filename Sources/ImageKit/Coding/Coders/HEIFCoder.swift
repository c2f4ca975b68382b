#if HEIF
internal import CHeif
internal import CImageCodecs
import Foundation

/// HEIC/HEIF decoding with libheif (libde265 for HEVC): the primary image, grids (how iPhones
/// store photos), alpha, 10- and 12-bit images reduced to 8 bits, the `irot`/`imir`/`clap`
/// transforms applied by libheif (they win over an EXIF orientation stored inside, which is not
/// applied, as in browsers), and the `colr` ICC profile converted to sRGB. An image whose `nclx`
/// transfer is PQ or HLG is decoded at its depth and tone-mapped to sRGB
/// (``DecodedImage/hdrTransfer``); Apple's HDR gain map is reported, not applied
/// (``DecodedImage/hasGainMap``).
///
/// Encoding writes HEIC (HEVC through libheif's x265 plugin): a still (the first frame), with
/// alpha when the image has any, at libheif's lossy quality (``ImageEncodingOptions/quality``
/// × 100) or lossless; ``ImageEncodingOptions/speed`` 0 … 10 picks x265's preset from `veryslow`
/// to `ultrafast` (nil: libheif's default), and a carried ``DecodedImage/colorProfile`` is
/// embedded. A libheif without an HEVC encoder answers `unsupportedFormat`.
///
/// A thumbnail request is served from the file's embedded thumbnail item when that is at least
/// the requested size (as libvips does), which skips decoding the full image. Each decode uses
/// one thread: a server decodes many images at once. Built with the `HEIF` package trait; with
/// the `HEVCAVCodec` trait too, HEVC is decoded by FFmpeg's libavcodec (a libheif decoder
/// plugin, the same pixels, faster) instead of libde265.
public struct HEIFCoder: ImageCoding {
    /// The HEIF/HEIC decoder (libheif).
    public init() {}

    /// Whether HEVC goes through libavcodec (the `HEVCAVCodec` trait) rather than libde265.
    public static let decodesHEVCWithLibavcodec = ik_heif_avcodec_register() != 0

    /// True for HEIC and HEIF.
    public func canDecode(_ signature: ImageSignature) -> Bool {
        signature.format == .heic || signature.format == .heif
    }
    /// True for HEIC (libheif with an HEVC encoder).
    public func canEncode(_ format: ImageFormat) -> Bool { format == .heic }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        let format = ImageSignature(data).format
        return try data.withImageBytes { bytes throws(ImageError) in
            try Self.decode(bytes, format: format, options: options)
        }
    }

    /// x265's presets, slowest first: ``ImageEncodingOptions/speed`` 0 … 10 picks among them.
    static let presets = [
        "veryslow", "slower", "slow", "medium", "fast", "faster", "veryfast", "superfast", "ultrafast",
    ]

    /// Writes HEIC (see the type's description for the settings).
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard format == .heic else { throw ImageError(.encodingFailed, "HEIFCoder writes HEIC, not \(format)") }
        guard heif_have_encoder_for_format(heif_compression_HEVC) != 0 else {
            throw ImageError(.unsupportedFormat, "this libheif has no HEVC encoder (x265)")
        }
        let bitmap = image.bitmap
        let hasAlpha = !(bitmap.isOpaque || bitmap.scanIsOpaque())
        guard let context = heif_context_alloc() else { throw ImageError(.internalError, "libheif: out of memory") }
        defer { heif_context_free(context) }
        var encoder: OpaquePointer?
        try Self.encodeCheck(
            heif_context_get_encoder_for_format(context, heif_compression_HEVC, &encoder), "finding the HEVC encoder")
        defer { heif_encoder_release(encoder) }
        if options.lossless {
            try Self.encodeCheck(heif_encoder_set_lossless(encoder, 1), "lossless mode")
        } else {
            let quality = Int32((max(0, min(1, options.quality)) * 100).rounded())
            try Self.encodeCheck(heif_encoder_set_lossy_quality(encoder, quality), "the quality")
        }
        if let speed = options.speed {
            let index = Int((Double(max(0, min(10, speed))) * Double(Self.presets.count - 1) / 10).rounded())
            try Self.encodeCheck(
                heif_encoder_set_parameter_string(encoder, "preset", Self.presets[index]), "the preset")
        }
        var picture: OpaquePointer?
        try Self.encodeCheck(
            heif_image_create(
                Int32(bitmap.width), Int32(bitmap.height), heif_colorspace_RGB,
                hasAlpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &picture),
            "creating the image")
        defer { heif_image_release(picture) }
        try Self.encodeCheck(
            heif_image_add_plane(picture, heif_channel_interleaved, Int32(bitmap.width), Int32(bitmap.height), 8),
            "adding its plane")
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane(picture, heif_channel_interleaved, &stride) else {
            throw ImageError(.internalError, "libheif: no plane to write")
        }
        let channels = hasAlpha ? 4 : 3
        for y in 0..<bitmap.height {
            let row = bitmap.baseAddress.advanced(by: y * bitmap.bytesPerRow).assumingMemoryBound(to: UInt8.self)
            let out = plane + y * Int(stride)
            if hasAlpha {
                out.update(from: row, count: bitmap.width * 4)
            } else {
                for x in 0..<bitmap.width {
                    out[x * channels] = row[x * 4]
                    out[x * channels + 1] = row[x * 4 + 1]
                    out[x * channels + 2] = row[x * 4 + 2]
                }
            }
        }
        if let profile = image.colorProfile {
            let icc = [UInt8](profile.iccData)
            try Self.encodeCheck(heif_image_set_raw_color_profile(picture, "prof", icc, icc.count), "the ICC profile")
        }
        try Self.encodeCheck(heif_context_encode_image(context, picture, encoder, nil, nil), "encoding")
        let sink = HEIFSink()
        var writer = heif_writer(writer_api_version: 1, write: HEIFSink.write)
        try Self.encodeCheck(
            heif_context_write(context, &writer, Unmanaged.passUnretained(sink).toOpaque()), "writing the file")
        return withExtendedLifetime(sink) { sink.data }
    }

    private static func encodeCheck(_ error: heif_error, _ what: String) throws(ImageError) {
        guard error.code != heif_error_Ok else { return }
        let message = error.message.map { String(cString: $0) } ?? "error \(error.code.rawValue)"
        throw ImageError(.encodingFailed, "HEIC \(what): \(message)")
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, format: ImageFormat, options: ImageDecodingOptions)
        throws(ImageError) -> DecodedImage
    {
        _ = decodesHEVCWithLibavcodec  // registers the plugin once, before the first decode
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
        // A file whose nclx box holds an unknown code is read as SDR without asking libheif (see
        // BMFFBoxes.nclxCodesAreKnown: libheif 1.15 leaks on that path).
        let readsNCLX = BMFFBoxes.nclxCodesAreKnown(bytes)
        let hdrTransfer =
            readsNCLX ? Self.hdrTransfer(source) ?? (source == primary ? nil : Self.hdrTransfer(primary)) : nil
        // An HDR image keeps its 10 or 12 bits (two bytes a sample) for the tone mapper.
        let deep = hdrTransfer != nil && bits > 8
        decodeOptions.pointee.convert_hdr_to_8bit = deep ? 0 : 1
        let chroma =
            deep
            ? (hasAlpha ? heif_chroma_interleaved_RRGGBBAA_LE : heif_chroma_interleaved_RRGGBB_LE)
            : heif_chroma_interleaved_RGBA
        var image: OpaquePointer?
        try check(heif_decode_image(source, &image, heif_colorspace_RGB, chroma, decodeOptions), "decoding")
        guard let image else { throw ImageError(.badImageData, "HEIF: the image did not decode") }
        defer { heif_image_release(image) }
        let width = Int(heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image, heif_channel_interleaved))
        var stride: Int32 = 0
        guard width > 0, height > 0, let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride)
        else {
            throw ImageError(.badImageData, "HEIF: the decoded image has no pixels")
        }
        var bitmap: Bitmap
        if let hdrTransfer {
            bitmap = try Self.toneMap(
                image, plane: plane, stride: Int(stride), deep: deep, hasAlpha: hasAlpha, transfer: hdrTransfer,
                nclx: Self.nclx(source) ?? Self.nclx(primary), width: width, height: height,
                reducingBy: HDRToneMapper.reductionFactor(from: PixelSize(width: width, height: height), to: target))
        } else {
            let buffer = try PixelBuffer(width: width, height: height)
            for y in 0..<height { buffer.row(y).update(from: plane + y * Int(stride), count: width * 4) }
            bitmap = buffer.freeze(isOpaque: !hasAlpha)
        }
        // The full image's target, whether the primary image or a thumbnail item was decoded.
        if bitmap.size != target { bitmap = try bitmap.resized(to: target) }
        var decoded = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: format)
        if let hdrTransfer {
            decoded.hdrTransfer = hdrTransfer
        } else {
            ColorManagement.apply(icc, to: &decoded, options: options)
        }
        decoded.hasGainMap = GainMapDetection.isPresent(in: bytes, format: format)
        return decoded
    }

    /// The image's `nclx` colour: primaries and transfer (nil: none, or an ICC profile only).
    static func nclx(_ handle: OpaquePointer) -> (primaries: Int, transfer: Int)? {
        var profile: UnsafeMutablePointer<heif_color_profile_nclx>?
        guard heif_image_handle_get_nclx_color_profile(handle, &profile).code == heif_error_Ok, let profile else {
            return nil
        }
        defer { heif_nclx_color_profile_free(profile) }
        return (Int(profile.pointee.color_primaries.rawValue), Int(profile.pointee.transfer_characteristics.rawValue))
    }

    static func hdrTransfer(_ handle: OpaquePointer) -> HDRTransfer? {
        nclx(handle).flatMap { HDRTransfer(cicpTransfer: $0.transfer) }
    }

    /// A PQ or HLG image's pixels in SDR sRGB: `plane` holds 16-bit little-endian samples of
    /// the image's depth when `deep`, else 8-bit RGBA (an 8-bit HDR file).
    private static func toneMap(
        _ image: OpaquePointer, plane: UnsafePointer<UInt8>, stride: Int, deep: Bool, hasAlpha: Bool,
        transfer: HDRTransfer, nclx: (primaries: Int, transfer: Int)?, width: Int, height: Int, reducingBy factor: Int
    ) throws(ImageError) -> Bitmap {
        var peak: Double?
        if heif_image_has_content_light_level(image) != 0 {
            var level = heif_content_light_level()
            heif_image_get_content_light_level(image, &level)
            peak = Double(level.max_content_light_level)
        }
        let channels = deep && !hasAlpha ? 3 : 4
        let bits = deep ? Int(heif_image_get_bits_per_pixel_range(image, heif_channel_interleaved)) : 8
        let mapper = HDRToneMapper.mapper(
            transfer: transfer, primaries: ColorPrimaries(cicp: nclx?.primaries ?? 9),
            maxCode: (1 << max(8, min(16, bits))) - 1, peakNits: peak)
        if deep {
            // Rows of 16-bit samples: libheif aligns each row, in bytes.
            return try plane.withMemoryRebound(to: UInt16.self, capacity: stride / 2 * height) {
                samples throws(ImageError) in
                try mapper.map(
                    samples, stride: stride / 2, channels: channels, width: width, height: height, isOpaque: !hasAlpha,
                    reducingBy: factor)
            }
        }
        var samples = [UInt16](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for index in 0..<width * 4 { samples[y * width * 4 + index] = UInt16(plane[y * stride + index]) }
        }
        return try samples.withUnsafeBufferPointer { samples throws(ImageError) in
            try mapper.map(
                samples.baseAddress!, stride: width * 4, channels: 4, width: width, height: height, isOpaque: !hasAlpha,
                reducingBy: factor)
        }
    }

    /// Whether libheif sees an alpha channel on the primary image (a container parse, no
    /// decoding); false for data it cannot read.
    static func primaryImageHasAlpha(_ bytes: UnsafeRawBufferPointer) -> Bool {
        withPrimaryImage(bytes) { heif_image_handle_has_alpha_channel($0) != 0 } ?? false
    }

    /// The primary image's displayed size (libheif's handle applies `clap`, `irot` and `imir`, as
    /// ``decode(_:options:)`` does), read from the boxes: nothing is decoded.
    static func displayedSize(_ bytes: UnsafeRawBufferPointer) -> PixelSize? {
        withPrimaryImage(bytes) {
            PixelSize(width: Int(heif_image_handle_get_width($0)), height: Int(heif_image_handle_get_height($0)))
        }
    }

    /// `body` on the primary image's handle of a parsed (not decoded) file; nil when libheif cannot
    /// read the boxes.
    private static func withPrimaryImage<Result>(
        _ bytes: UnsafeRawBufferPointer, _ body: (OpaquePointer) -> Result
    ) -> Result? {
        guard bytes.count > 0, let context = heif_context_alloc() else { return nil }
        defer { heif_context_free(context) }
        guard
            heif_context_read_from_memory_without_copy(context, bytes.baseAddress, bytes.count, nil).code
                == heif_error_Ok
        else { return nil }
        var primary: OpaquePointer?
        guard heif_context_get_primary_image_handle(context, &primary).code == heif_error_Ok, let primary else {
            return nil
        }
        defer { heif_image_handle_release(primary) }
        return body(primary)
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

/// Collects what libheif writes (`heif_context_write` calls back with the file in pieces).
private final class HEIFSink {
    var data = Data()

    static let write: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int, UnsafeMutableRawPointer?) -> heif_error =
        {
            _, bytes, size, context in
            let sink = Unmanaged<HEIFSink>.fromOpaque(context!).takeUnretainedValue()
            if let bytes, size > 0 { sink.data.append(bytes.assumingMemoryBound(to: UInt8.self), count: size) }
            return heif_error(
                code: heif_error_Ok, subcode: heif_suberror_Unspecified,
                message: UnsafeRawPointer(("ok" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self))
        }
}
#endif
