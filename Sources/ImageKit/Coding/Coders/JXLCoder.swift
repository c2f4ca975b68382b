#if JXL
internal import CJXL
import Foundation

/// JPEG XL decoding and encoding with libjxl. Decodes stills and animations (frames coalesced,
/// with their durations and loop count), alpha (straight), gray, the orientation field applied,
/// colour to sRGB.
///
/// Encoding writes a still (the first frame) as a bare codestream, with alpha when the image has
/// any: lossy at the butteraugli distance cjxl derives from a quality (``distance(forQuality:)``),
/// or ``ImageEncodingOptions/lossless`` (modular, the original profile kept); an
/// ``ImageEncodingOptions/speed`` of 0 … 10 picks libjxl's effort 9 … 1 (nil: libjxl's 7), and a
/// carried ``DecodedImage/colorProfile`` is embedded (otherwise the pixels are tagged sRGB).
///
/// Colour: a lossy (XYB) file is rendered by libjxl straight to sRGB; a file that keeps its
/// original profile (lossless, or stored as RGB) is converted from that profile by Little CMS
/// like every other format. A PQ or HLG colour encoding is decoded as 16-bit samples in that
/// encoding and tone-mapped to sRGB (``DecodedImage/hdrTransfer``). Thumbnails are decoded whole, then resized (libjxl 0.7 has no
/// scaled decode). One thread per decode. Built with the `JXL` package trait.
public struct JXLCoder: ImageCoding {
    /// The JPEG XL decoder (libjxl).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .jpegXL }
    /// True for JPEG XL.
    public func canEncode(_ format: ImageFormat) -> Bool { format == .jpegXL }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in try Self.decode(bytes, options: options) }
    }

    /// The displayed size (the orientation field applied, as ``decode(_:options:)`` returns it) from
    /// the basic info at the head of the codestream: nothing is decoded.
    static func displayedSize(_ bytes: UnsafeRawBufferPointer) -> PixelSize? {
        guard let base = bytes.baseAddress, bytes.count > 0, let decoder = JxlDecoderCreate(nil) else { return nil }
        defer { JxlDecoderDestroy(decoder) }
        guard JxlDecoderSubscribeEvents(decoder, Int32(JXL_DEC_BASIC_INFO.rawValue)) == JXL_DEC_SUCCESS,
            JxlDecoderSetInput(decoder, base.assumingMemoryBound(to: UInt8.self), bytes.count) == JXL_DEC_SUCCESS
        else { return nil }
        JxlDecoderCloseInput(decoder)
        var info = JxlBasicInfo()
        guard JxlDecoderProcessInput(decoder) == JXL_DEC_BASIC_INFO,
            JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS
        else { return nil }
        let stored = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
        return info.orientation.rawValue > 4 ? stored.transposed : stored
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the JPEG XL data is empty")
        }
        guard let decoder = JxlDecoderCreate(nil) else { throw ImageError(.internalError, "libjxl: out of memory") }
        defer { JxlDecoderDestroy(decoder) }
        let events =
            JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue
            | JXL_DEC_FULL_IMAGE.rawValue
        guard JxlDecoderSubscribeEvents(decoder, Int32(events)) == JXL_DEC_SUCCESS,
            JxlDecoderSetUnpremultiplyAlpha(decoder, 1) == JXL_DEC_SUCCESS,
            JxlDecoderSetInput(decoder, base.assumingMemoryBound(to: UInt8.self), bytes.count) == JXL_DEC_SUCCESS
        else {
            throw ImageError(.internalError, "libjxl refused its settings")
        }
        JxlDecoderCloseInput(decoder)

        var info = JxlBasicInfo()
        var format = JxlPixelFormat(num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        var frames: [ImageFrame] = []
        var pending: Bitmap?
        var pendingDuration = 0.0
        var shown = PixelSize(width: 0, height: 0), target = shown
        var frameLimit = 1
        var dataProfile: Data?
        var sourceProfile: Data?
        var hdr: JXLHDROutput?
        decoding: while true {
            let status = JxlDecoderProcessInput(decoder)
            switch status {
            case JXL_DEC_BASIC_INFO:
                guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                    throw ImageError(.badImageData, "JPEG XL: bad header")
                }
                let stored = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
                try options.limits.checkPixels(width: stored.width, height: stored.height)
                shown = info.orientation.rawValue > 4 ? stored.transposed : stored
                frameLimit = info.have_animation != 0 && !options.firstFrameOnly ? Int.max : 1
                // The frame count is not in the header: the budget is checked per frame below.
                target = DecodeTarget.size(for: shown, frames: 1, options: options)
                try options.limits.check(width: target.width, height: target.height)
                try options.limits.checkWorking(
                    Self.workingBytes(info), outputBytes: target.pixelCount * 4,
                    "the \(stored) JPEG XL frame's planes")
            case JXL_DEC_COLOR_ENCODING:
                sourceProfile = iccProfile(decoder, JXL_COLOR_PROFILE_TARGET_ORIGINAL)
                hdr = JXLHDROutput(decoder, info: info)
                if hdr == nil {
                    dataProfile = Self.chooseOutputColor(decoder, info: info, keepsProfile: options.keepsColorProfile)
                }
            case JXL_DEC_FRAME:
                var header = JxlFrameHeader()
                if info.have_animation != 0, JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS,
                    info.animation.tps_numerator > 0
                {
                    pendingDuration =
                        Double(header.duration) * Double(info.animation.tps_denominator)
                        / Double(info.animation.tps_numerator)
                }
            case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                try options.limits.check(width: target.width, height: target.height, frames: frames.count + 1)
                // libjxl writes the oriented frame: the displayed size.
                if let hdr {
                    try hdr.setOutputBuffer(decoder, size: shown)
                    pending = nil
                } else {
                    pending = try Self.setOutputBuffer(
                        decoder, format: &format, size: shown, isOpaque: info.alpha_bits == 0)
                }
            case JXL_DEC_FULL_IMAGE:
                guard var bitmap = try hdr?.toneMapped(isOpaque: info.alpha_bits == 0, target: target) ?? pending else {
                    throw ImageError(.badImageData, "JPEG XL: a frame without pixels")
                }
                pending = nil
                if bitmap.size != target { bitmap = try bitmap.resized(to: target) }
                frames.append(ImageFrame(bitmap: bitmap, duration: info.have_animation != 0 ? pendingDuration : 0))
                if frames.count >= frameLimit { break decoding }
            case JXL_DEC_SUCCESS:
                break decoding
            case JXL_DEC_NEED_MORE_INPUT:
                throw ImageError(.truncatedData, "JPEG XL: the data ends early")
            default:
                throw ImageError(.badImageData, "JPEG XL: the codestream is corrupt")
            }
        }
        guard !frames.isEmpty else { throw ImageError(.truncatedData, "JPEG XL: no frame decoded") }
        let loopCount = frames.count > 1 ? Int(info.animation.num_loops) : 1
        var image = DecodedImage(frames: frames, loopCount: loopCount, format: .jpegXL)
        image.hdrTransfer = hdr?.mapper.key.transfer
        image.hasGainMap = GainMapDetection.isPresent(in: bytes, format: .jpegXL)
        ColorManagement.apply(dataProfile, to: &image, options: options)
        if let sourceProfile, image.sourceColorProfile == nil {
            image.sourceColorProfile = ColorManagement.profile(sourceProfile)
        }
        return image
    }

    /// A bitmap of `size` that libjxl will write the next frame into (RGBA8, rows as the bitmap's).
    static func setOutputBuffer(
        _ decoder: OpaquePointer, format: inout JxlPixelFormat, size: PixelSize,
        isOpaque: Bool
    ) throws(ImageError) -> Bitmap {
        let output = try PixelBuffer(width: size.width, height: size.height).freeze(isOpaque: isOpaque)
        format.align = output.bytesPerRow
        var needed = 0
        guard JxlDecoderImageOutBufferSize(decoder, &format, &needed) == JXL_DEC_SUCCESS, needed <= output.byteCount,
            JxlDecoderSetImageOutBuffer(decoder, &format, output.baseAddress, output.byteCount) == JXL_DEC_SUCCESS
        else {
            throw ImageError(.internalError, "JPEG XL: the output buffer does not fit (\(needed) bytes)")
        }
        return output
    }

    /// libjxl's own buffers for one frame: measured 32 MB beyond the output for a 12 MP lossy
    /// (VarDCT) file, about 2.7 bytes a pixel; a modular (lossless) frame keeps 32-bit channels
    /// whole, 4 bytes a sample.
    static func workingBytes(_ info: JxlBasicInfo) -> Int {
        let pixels = Int(info.xsize) * Int(info.ysize)
        let perPixel =
            info.uses_original_profile != 0 ? 4 * Int(info.num_color_channels + (info.alpha_bits > 0 ? 1 : 0)) : 4
        return pixels.multipliedReportingOverflow(by: perPixel).overflow ? Int.max : pixels * perPixel
    }

    /// At the colour-encoding event: asks libjxl to render a lossy (XYB) file straight to sRGB
    /// unless the profile is kept; returns the ICC profile of the pixels libjxl will write
    /// otherwise (nil: sRGB).
    static func chooseOutputColor(_ decoder: OpaquePointer, info: JxlBasicInfo, keepsProfile: Bool) -> Data? {
        if info.uses_original_profile == 0 && !keepsProfile {
            var srgb = JxlColorEncoding()
            JxlColorEncodingSetToSRGB(&srgb, info.num_color_channels == 1 ? 1 : 0)
            if JxlDecoderSetPreferredColorProfile(decoder, &srgb) == JXL_DEC_SUCCESS { return nil }
        }
        return iccProfile(decoder, JXL_COLOR_PROFILE_TARGET_DATA)
    }

    // MARK: - Encoding

    /// cjxl's mapping from a JPEG-like quality (0…1 here, 0…100 there) to a butteraugli distance:
    /// 1 (visually lossless) at 0.9, 0.1 at 1, growing fast below 0.3; capped at libjxl's 25.
    public static func distance(forQuality quality: Double) -> Float {
        let q = max(0, min(100, quality * 100))
        let distance = q >= 30 ? 0.1 + (100 - q) * 0.09 : 53.0 / 3000 * q * q - 23.0 / 20 * q + 25
        return Float(min(25, max(0.1, distance)))
    }

    /// Writes a JPEG XL codestream (see the type's description for the settings).
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard format == .jpegXL else { throw ImageError(.encodingFailed, "JXLCoder writes JPEG XL, not \(format)") }
        let bitmap = image.bitmap
        let hasAlpha = !(bitmap.isOpaque || bitmap.scanIsOpaque())
        guard let encoder = JxlEncoderCreate(nil) else { throw ImageError(.internalError, "libjxl: out of memory") }
        defer { JxlEncoderDestroy(encoder) }
        var info = JxlBasicInfo()
        JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(bitmap.width)
        info.ysize = UInt32(bitmap.height)
        info.bits_per_sample = 8
        info.num_color_channels = 3
        info.num_extra_channels = hasAlpha ? 1 : 0
        info.alpha_bits = hasAlpha ? 8 : 0
        // Lossless keeps the samples as they are (no XYB), which needs the original profile.
        info.uses_original_profile = options.lossless ? 1 : 0
        try Self.check(JxlEncoderSetBasicInfo(encoder, &info), encoder, "the image header")
        if let profile = image.colorProfile {
            let icc = [UInt8](profile.iccData)
            try Self.check(JxlEncoderSetICCProfile(encoder, icc, icc.count), encoder, "the ICC profile")
        } else {
            var srgb = JxlColorEncoding()
            JxlColorEncodingSetToSRGB(&srgb, 0)
            try Self.check(JxlEncoderSetColorEncoding(encoder, &srgb), encoder, "the colour encoding")
        }
        guard let settings = JxlEncoderFrameSettingsCreate(encoder, nil) else {
            throw ImageError(.internalError, "libjxl: out of memory")
        }
        if options.lossless {
            try Self.check(JxlEncoderSetFrameLossless(settings, 1), encoder, "lossless mode")
        } else {
            try Self.check(
                JxlEncoderSetFrameDistance(settings, Self.distance(forQuality: options.quality)), encoder,
                "the distance")
        }
        if let speed = options.speed {
            let effort = Int64(9 - (Double(max(0, min(10, speed))) * 0.8).rounded())
            try Self.check(
                JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, effort), encoder, "the effort")
        }
        let channels = hasAlpha ? 4 : 3
        let pixels = Self.packed(bitmap, channels: channels)
        var format = JxlPixelFormat(
            num_channels: UInt32(channels), data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        try Self.check(
            JxlEncoderAddImageFrame(settings, &format, pixels, pixels.count), encoder, "the pixels")
        JxlEncoderCloseInput(encoder)
        var output = [UInt8](repeating: 0, count: max(4096, pixels.count / 8))
        var written = 0
        while true {
            let status = output.withUnsafeMutableBufferPointer { buffer -> JxlEncoderStatus in
                var next: UnsafeMutablePointer<UInt8>? = buffer.baseAddress! + written
                var available = buffer.count - written
                let status = JxlEncoderProcessOutput(encoder, &next, &available)
                written = buffer.count - available
                return status
            }
            if status == JXL_ENC_NEED_MORE_OUTPUT {
                output.append(contentsOf: repeatElement(0, count: output.count))
                continue
            }
            try Self.check(status, encoder, "encoding")
            break
        }
        return Data(output[..<written])
    }

    /// The bitmap's pixels as tightly packed RGB (`channels` 3) or RGBA rows.
    private static func packed(_ bitmap: Bitmap, channels: Int) -> [UInt8] {
        let (width, height) = (bitmap.width, bitmap.height)
        return [UInt8](unsafeUninitializedCapacity: width * height * channels) { buffer, count in
            for y in 0..<height {
                let row = bitmap.baseAddress.advanced(by: y * bitmap.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                let out = buffer.baseAddress! + y * width * channels
                if channels == 4 {
                    out.update(from: row, count: width * 4)
                } else {
                    for x in 0..<width {
                        out[x * 3] = row[x * 4]
                        out[x * 3 + 1] = row[x * 4 + 1]
                        out[x * 3 + 2] = row[x * 4 + 2]
                    }
                }
            }
            count = width * height * channels
        }
    }

    private static func check(_ status: JxlEncoderStatus, _ encoder: OpaquePointer, _ what: String) throws(ImageError) {
        guard status != JXL_ENC_SUCCESS else { return }
        throw ImageError(.encodingFailed, "JPEG XL \(what): libjxl error \(JxlEncoderGetError(encoder).rawValue)")
    }

    /// The ICC profile libjxl reports for `target` (the file's original, or the pixels' own).
    static func iccProfile(_ decoder: OpaquePointer, _ target: JxlColorProfileTarget) -> Data? {
        var size = 0
        guard JxlDecoderGetICCProfileSize(decoder, nil, target, &size) == JXL_DEC_SUCCESS, size > 0, size < 64 << 20
        else { return nil }
        var data = Data(count: size)
        let status = data.withUnsafeMutableBytes { raw in
            JxlDecoderGetColorAsICCProfile(
                decoder, nil, target, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), size)
        }
        return status == JXL_DEC_SUCCESS ? data : nil
    }
}
/// A PQ or HLG JPEG XL's frames: libjxl writes 16-bit samples in the file's own colour encoding
/// (a lossy, XYB file is asked for it), which ImageKit tone-maps to sRGB.
final class JXLHDROutput {
    let mapper: HDRToneMapper
    private var samples: UnsafeMutableBufferPointer<UInt16>?
    private var size = PixelSize(width: 0, height: 0)

    /// At the colour-encoding event: nil for an SDR file; for an HDR one, the output is set up.
    init?(_ decoder: OpaquePointer, info: JxlBasicInfo) {
        var encoding = JxlColorEncoding()
        guard
            JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_ORIGINAL, &encoding)
                == JXL_DEC_SUCCESS,
            let transfer = HDRTransfer(cicpTransfer: Int(encoding.transfer_function.rawValue))
        else { return nil }
        if info.uses_original_profile == 0 {
            guard JxlDecoderSetPreferredColorProfile(decoder, &encoding) == JXL_DEC_SUCCESS else { return nil }
        }
        // libjxl's intensity target defaults to 10 000 cd/m² for PQ: a stated peak only below that.
        let peak = info.intensity_target > 0 && info.intensity_target < 10_000 ? Double(info.intensity_target) : nil
        mapper = HDRToneMapper.mapper(
            transfer: transfer, primaries: ColorPrimaries(cicp: Int(encoding.primaries.rawValue)), maxCode: 65535,
            peakNits: peak)
    }

    deinit { samples?.deallocate() }

    /// Hands libjxl the sample buffer for the next frame of `size` (the displayed size).
    func setOutputBuffer(_ decoder: OpaquePointer, size: PixelSize) throws(ImageError) {
        let count = size.pixelCount * 4
        if samples == nil || samples!.count < count {
            samples?.deallocate()
            samples = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: count)
        }
        self.size = size
        var format = JxlPixelFormat(
            num_channels: 4, data_type: JXL_TYPE_UINT16, endianness: JXL_NATIVE_ENDIAN, align: 0)
        var needed = 0
        guard JxlDecoderImageOutBufferSize(decoder, &format, &needed) == JXL_DEC_SUCCESS, needed <= count * 2,
            JxlDecoderSetImageOutBuffer(decoder, &format, samples!.baseAddress, count * 2) == JXL_DEC_SUCCESS
        else {
            throw ImageError(.internalError, "JPEG XL: the output buffer does not fit (\(needed) bytes)")
        }
    }

    /// The frame libjxl just wrote, tone-mapped (reduced first towards `target`, when given).
    func toneMapped(isOpaque: Bool, target: PixelSize? = nil) throws(ImageError) -> Bitmap {
        guard let samples else { throw ImageError(.badImageData, "JPEG XL: a frame without pixels") }
        return try mapper.map(
            samples.baseAddress!, stride: size.width * 4, channels: 4, width: size.width, height: size.height,
            isOpaque: isOpaque, reducingBy: target.map { HDRToneMapper.reductionFactor(from: size, to: $0) } ?? 1)
    }
}
#endif
