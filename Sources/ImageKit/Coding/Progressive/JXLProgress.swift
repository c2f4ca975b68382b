#if JXL
internal import CJXL
import Foundation

/// Progressive JPEG XL state: one libjxl decoder fed each new run of bytes. Once the bytes run
/// out, libjxl renders what it has (after a progressive step — the 1/8-resolution DC image,
/// upsampled, then each pass — or the groups completed so far) and that is the preview; the
/// completed first frame is the last one. Animations preview their first frame only.
final class JXLProgress {
    private let limits: DecodingLimits
    private let decoder: OpaquePointer?
    /// Bytes of the data libjxl has taken in; the rest is handed over again next time.
    private var consumed = 0
    private var info = JxlBasicInfo()
    private var shown = PixelSize(width: 0, height: 0)
    private var output: Bitmap?
    private var dataProfile: Data?
    private var failed = false
    private var complete = false

    init(limits: DecodingLimits) {
        self.limits = limits
        decoder = JxlDecoderCreate(nil)
        let events =
            JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME_PROGRESSION.rawValue
            | JXL_DEC_FULL_IMAGE.rawValue
        if let decoder {
            if JxlDecoderSubscribeEvents(decoder, Int32(events)) != JXL_DEC_SUCCESS
                || JxlDecoderSetUnpremultiplyAlpha(decoder, 1) != JXL_DEC_SUCCESS
                || JxlDecoderSetProgressiveDetail(decoder, kPasses) != JXL_DEC_SUCCESS
            {
                failed = true
            }
        } else {
            failed = true
        }
    }

    deinit {
        if let decoder { JxlDecoderDestroy(decoder) }
    }

    func preview(_ data: Data, options: ImageDecodingOptions) -> DecodedImage? {
        guard !failed, !complete, let decoder, data.count > consumed else { return nil }
        let start = consumed
        var progressed = false
        data.withUnsafeBytes { bytes in
            guard
                JxlDecoderSetInput(
                    decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + start, bytes.count - start)
                    == JXL_DEC_SUCCESS
            else { failed = true; return }
            defer { consumed = bytes.count - JxlDecoderReleaseInput(decoder) }
            while true {
                switch JxlDecoderProcessInput(decoder) {
                case JXL_DEC_BASIC_INFO:
                    guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else { failed = true; return }
                    let stored = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
                    shown = info.orientation.rawValue > 4 ? stored.transposed : stored
                    // The preview buffer is the full displayed frame, plus libjxl's own planes.
                    guard (try? limits.check(width: shown.width, height: shown.height)) != nil,
                        (try? limits.checkWorking(JXLCoder.workingBytes(info), outputBytes: shown.pixelCount * 4, ""))
                            != nil
                    else {
                        failed = true
                        return
                    }
                case JXL_DEC_COLOR_ENCODING:
                    dataProfile = JXLCoder.chooseOutputColor(
                        decoder, info: info, keepsProfile: options.keepsColorProfile)
                case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                    guard output == nil, let buffer = try? PixelBuffer(width: shown.width, height: shown.height) else {
                        failed = true
                        return
                    }
                    buffer.baseAddress.initializeMemory(as: UInt8.self, repeating: 0, count: buffer.byteCount)
                    let bitmap = buffer.freeze(isOpaque: info.alpha_bits == 0)
                    var format = JxlPixelFormat(
                        num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN,
                        align: bitmap.bytesPerRow)
                    guard
                        JxlDecoderSetImageOutBuffer(decoder, &format, bitmap.baseAddress, bitmap.byteCount)
                            == JXL_DEC_SUCCESS
                    else {
                        failed = true
                        return
                    }
                    output = bitmap
                case JXL_DEC_FRAME_PROGRESSION:
                    progressed = true  // rendered once, below, when the new bytes are used up
                case JXL_DEC_FULL_IMAGE:
                    complete = true
                    progressed = true
                    return
                case JXL_DEC_NEED_MORE_INPUT:
                    // Not every file has progressive steps (the event is optional); whatever
                    // groups the new bytes completed are rendered all the same.
                    if progressed || output != nil { progressed = JxlDecoderFlushImage(decoder) == JXL_DEC_SUCCESS }
                    return
                case JXL_DEC_SUCCESS:
                    complete = true
                    return
                default:
                    failed = true
                    return
                }
            }
        }
        guard progressed, !failed, let output else { return nil }
        // libjxl keeps writing into `output`: the preview is a copy.
        guard var buffer = try? PixelBuffer(width: output.width, height: output.height) else { return nil }
        buffer.copyPixels(from: output)
        var bitmap = buffer.freeze(isOpaque: output.isOpaque)
        let target = DecodeTarget.size(for: shown, options: options)
        if target != shown {
            guard let resized = try? bitmap.resized(to: target) else { return nil }
            bitmap = resized
        }
        var image = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .jpegXL)
        ColorManagement.apply(dataProfile, to: &image, options: options)
        return image
    }
}

extension JXLCoder: ProgressiveImageDecoding {
    /// Previews from each progressive step (the 1/8 DC image, then each pass) of the first frame.
    public func makeProgressiveSession(for signature: ImageSignature, options: ImageDecodingOptions) -> (
        any ProgressiveDecodingSession
    )? {
        ProgressiveEngineSession(JXLProgress(limits: options.limits), options: options) { $0.preview($1, options: $2) }
    }
}

#endif
