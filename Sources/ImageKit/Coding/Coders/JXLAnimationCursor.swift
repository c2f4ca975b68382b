#if JXL
internal import CJXL
import Foundation

/// JPEG XL animations frame by frame: libjxl composites (coalesces) each frame and can stop
/// after it, and skips frames it is told to (`JxlDecoderSkipFrames`, decoding only what later
/// frames refer to), so a checkpoint is a frame index.
final class JXLAnimationCursor: AnimationFrameCursor {
    private let data: Data
    private var decoder: OpaquePointer?
    /// Where the bytes libjxl reads were: `Data` lends them for one call at a time, so the
    /// decoder is made again (and skips to `nextIndex`) if they are lent elsewhere.
    private var lentAt: UnsafeRawPointer?
    private var info = JxlBasicInfo()
    /// The profile of the pixels libjxl writes (nil: sRGB), converted to sRGB per frame.
    private var dataProfile: Data?
    private var hdr: JXLHDROutput?
    private var shown = PixelSize(width: 0, height: 0)
    private(set) var nextIndex = 0

    init(data: Data) {
        self.data = data
    }

    deinit {
        if let decoder { JxlDecoderDestroy(decoder) }
    }

    /// A decoder past the headers and colour encoding, standing before frame `nextIndex`.
    private func withDecoder<Result>(_ body: (OpaquePointer) throws(ImageError) -> Result) throws(ImageError) -> Result
    {
        try data.withImageBytes { bytes throws(ImageError) in
            if decoder == nil || lentAt != bytes.baseAddress {
                if let decoder { JxlDecoderDestroy(decoder) }
                decoder = nil
                let fresh = try makeDecoder(bytes)
                decoder = fresh
                lentAt = bytes.baseAddress
                if nextIndex > 0 { JxlDecoderSkipFrames(fresh, nextIndex) }
            }
            return try body(decoder!)
        }
    }

    private func makeDecoder(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> OpaquePointer {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the JPEG XL data is empty")
        }
        guard let decoder = JxlDecoderCreate(nil) else { throw ImageError(.internalError, "libjxl: out of memory") }
        let events = JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FULL_IMAGE.rawValue
        guard JxlDecoderSubscribeEvents(decoder, Int32(events)) == JXL_DEC_SUCCESS,
            JxlDecoderSetUnpremultiplyAlpha(decoder, 1) == JXL_DEC_SUCCESS,
            JxlDecoderSetInput(decoder, base.assumingMemoryBound(to: UInt8.self), bytes.count) == JXL_DEC_SUCCESS
        else {
            JxlDecoderDestroy(decoder)
            throw ImageError(.internalError, "libjxl refused its settings")
        }
        JxlDecoderCloseInput(decoder)
        while true {
            switch JxlDecoderProcessInput(decoder) {
            case JXL_DEC_BASIC_INFO:
                guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                    JxlDecoderDestroy(decoder)
                    throw ImageError(.badImageData, "JPEG XL: bad header")
                }
                let stored = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
                shown = info.orientation.rawValue > 4 ? stored.transposed : stored
            case JXL_DEC_COLOR_ENCODING:
                hdr = JXLHDROutput(decoder, info: info)
                if hdr == nil { dataProfile = JXLCoder.chooseOutputColor(decoder, info: info, keepsProfile: false) }
                return decoder
            case JXL_DEC_NEED_MORE_INPUT:
                JxlDecoderDestroy(decoder)
                throw ImageError(.truncatedData, "JPEG XL: the data ends early")
            default:
                JxlDecoderDestroy(decoder)
                throw ImageError(.badImageData, "JPEG XL: the codestream is corrupt")
            }
        }
    }

    func decodeNext() throws(ImageError) -> Bitmap {
        try withDecoder { decoder throws(ImageError) in
            var format = JxlPixelFormat(
                num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
            var pending: Bitmap?
            while true {
                switch JxlDecoderProcessInput(decoder) {
                case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                    if let hdr {
                        try hdr.setOutputBuffer(decoder, size: shown)
                    } else {
                        pending = try JXLCoder.setOutputBuffer(
                            decoder, format: &format, size: shown, isOpaque: info.alpha_bits == 0)
                    }
                case JXL_DEC_FULL_IMAGE:
                    guard let bitmap = try hdr?.toneMapped(isOpaque: info.alpha_bits == 0) ?? pending else {
                        throw ImageError(.badImageData, "JPEG XL: a frame without pixels")
                    }
                    ColorManagement.convertToSRGB(bitmap, from: dataProfile)
                    nextIndex += 1
                    return bitmap
                case JXL_DEC_SUCCESS:
                    throw ImageError(.badImageData, "JPEG XL: there is no frame \(nextIndex)")
                case JXL_DEC_NEED_MORE_INPUT:
                    throw ImageError(.truncatedData, "JPEG XL: the data ends inside frame \(nextIndex)")
                default:
                    throw ImageError(.badImageData, "JPEG XL: frame \(nextIndex) is corrupt")
                }
            }
        }
    }

    func skipNext() throws(ImageError) {
        try withDecoder { decoder in JxlDecoderSkipFrames(decoder, 1) }
        nextIndex += 1
    }

    func checkpoint() throws(ImageError) -> AnimationCheckpoint<Int> {
        AnimationCheckpoint(canvas: nil, position: nextIndex)
    }

    func restore(_ checkpoint: AnimationCheckpoint<Int>) throws(ImageError) {
        // A fresh decoder skips to the position when it is next used.
        if let decoder { JxlDecoderDestroy(decoder) }
        decoder = nil
        nextIndex = checkpoint.position
    }

    func rewind() throws(ImageError) { try restore(AnimationCheckpoint(canvas: nil, position: 0)) }
}

extension JXLCoder: AnimatedImageDecoding {
    /// An animation's displayed size, frame durations and loop count from the frame headers
    /// (libjxl skips the pixels when only the headers are asked for); nil for a still.
    public func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo? {
        try data.withImageBytes { bytes throws(ImageError) -> AnimationInfo? in
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                throw ImageError(.emptyData, "the JPEG XL data is empty")
            }
            guard let decoder = JxlDecoderCreate(nil) else { throw ImageError(.internalError, "libjxl: out of memory") }
            defer { JxlDecoderDestroy(decoder) }
            let events = JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_FRAME.rawValue
            guard JxlDecoderSubscribeEvents(decoder, Int32(events)) == JXL_DEC_SUCCESS,
                JxlDecoderSetInput(decoder, base.assumingMemoryBound(to: UInt8.self), bytes.count) == JXL_DEC_SUCCESS
            else {
                throw ImageError(.internalError, "libjxl refused its settings")
            }
            JxlDecoderCloseInput(decoder)
            var info = JxlBasicInfo()
            var durations: [Double] = []
            while true {
                switch JxlDecoderProcessInput(decoder) {
                case JXL_DEC_BASIC_INFO:
                    guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                        throw ImageError(.badImageData, "JPEG XL: bad header")
                    }
                    guard info.have_animation != 0 else { return nil }
                    try limits.checkPixels(width: Int(info.xsize), height: Int(info.ysize))
                case JXL_DEC_FRAME:
                    var header = JxlFrameHeader()
                    guard JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS else {
                        throw ImageError(.badImageData, "JPEG XL: bad frame header")
                    }
                    durations.append(
                        info.animation.tps_numerator > 0
                            ? Double(header.duration) * Double(info.animation.tps_denominator)
                                / Double(info.animation.tps_numerator) : 0)
                case JXL_DEC_SUCCESS:
                    guard durations.count > 1 else { return nil }
                    let stored = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
                    return AnimationInfo(
                        canvasSize: info.orientation.rawValue > 4 ? stored.transposed : stored, durations: durations,
                        loopCount: Int(info.animation.num_loops))
                case JXL_DEC_NEED_MORE_INPUT:
                    throw ImageError(.truncatedData, "JPEG XL: the data ends early")
                default:
                    throw ImageError(.badImageData, "JPEG XL: the codestream is corrupt")
                }
            }
        }
    }

    /// A cursor that takes libjxl's coalesced frames one at a time.
    public func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
        -> any AnimationFrameCursor
    {
        JXLAnimationCursor(data: data)
    }
}
#endif
