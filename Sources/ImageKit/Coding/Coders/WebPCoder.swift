internal import CWebP
import Foundation

/// WebP decoding and encoding with libwebp: lossy, lossless, alpha, and animations.
///
/// Still images decode straight into ImageKit's buffer. Animations are composited by ImageKit
/// (blending and disposal as libwebp's `WebPAnimDecoder` does them), each frame decoded onto the
/// canvas and the canvas copied once into the frame's own bitmap. The EXIF orientation in an `EXIF` chunk is applied by default.
public struct WebPCoder: ImageCoding {
    /// The WebP coder (libwebp).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .webp }
    public func canEncode(_ format: ImageFormat) -> Bool { format == .webp }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in
            try Self.decode(bytes, options: options)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count > 0 else {
            throw ImageError(.emptyData, "the WebP data is empty")
        }
        var features = WebPBitstreamFeatures()
        let status = WebPGetFeatures(base, bytes.count, &features)
        guard status == VP8_STATUS_OK else { throw error(status, "WebP header") }

        let orientation = exifOrientation(bytes) ?? .up
        var image: DecodedImage
        if features.has_animation != 0 {
            // WebPAnimDecoder allocates two full canvases when it is created: checked before it
            // exists.
            let canvas = PixelSize(width: Int(features.width), height: Int(features.height))
            try options.limits.checkPixels(width: canvas.width, height: canvas.height)
            let target = DecodeTarget.size(for: canvas, frames: 1, options: options)
            try options.limits.checkWorking(
                2 * canvas.pixelCount * 4, outputBytes: target.pixelCount * 4,
                "the animated WebP's \(canvas) canvases")
            image = try decodeAnimation(bytes, options: options)
        } else {
            let full = PixelSize(width: Int(features.width), height: Int(features.height))
            let target = DecodeTarget.storedSize(
                for: full, orientation: options.appliesOrientation ? orientation : .up,
                frames: 1, options: options)
            let isOpaque = features.has_alpha == 0
            // libwebp scales while decoding; it stops at twice the target so the final Lanczos
            // step (in premultiplied alpha) sets the quality. Lossy images with alpha too, but
            // only to four times the target: libwebp averages colour without alpha weights, which
            // shows at transparency edges (≥ 38 dB of the whole decode + premultiplied resample
            // at 4x, 34.7 dB at 2x: ScalingTests), for a 14th of the memory. Lossless ones keep
            // exact colours under transparency and are decoded whole (libwebp decodes VP8L whole
            // before scaling anyway).
            var decodeSize = full
            let margin = isOpaque ? 2 : 4
            if target != full && (isOpaque || features.format == 1) && full.width > target.width * margin {
                decodeSize = PixelSize(
                    width: min(full.width, target.width * margin), height: min(full.height, target.height * margin))
            }
            if decodeSize != full || target != full {
                try options.limits.checkPixels(width: full.width, height: full.height)
            } else {
                try options.limits.check(width: full.width, height: full.height)
            }
            try options.limits.check(width: decodeSize.width, height: decodeSize.height)
            // Scaled lossy data streams (a few macroblock rows); lossless data (VP8L) is decoded
            // whole into a 4-byte-per-pixel buffer first, whatever the output size.
            if decodeSize != full && features.format == 2 {
                try options.limits.checkWorking(
                    full.pixelCount * 4, outputBytes: decodeSize.pixelCount * 4,
                    "lossless WebP (\(full)) decoded whole before scaling")
            }
            let buffer = try PixelBuffer(width: decodeSize.width, height: decodeSize.height)
            var config = WebPDecoderConfig()
            guard WebPInitDecoderConfig(&config) != 0 else {
                throw ImageError(.internalError, "libwebp version mismatch")
            }
            config.output.colorspace = MODE_RGBA
            config.output.is_external_memory = 1
            config.output.u.RGBA.rgba = buffer.row(0)
            config.output.u.RGBA.stride = Int32(buffer.bytesPerRow)
            config.output.u.RGBA.size = buffer.byteCount
            if decodeSize != full {
                config.options.use_scaling = 1
                config.options.scaled_width = Int32(decodeSize.width)
                config.options.scaled_height = Int32(decodeSize.height)
            }
            let decoded = WebPDecode(base, bytes.count, &config)
            WebPFreeDecBuffer(&config.output)
            guard decoded == VP8_STATUS_OK else { throw error(decoded, "WebP") }
            var bitmap = buffer.freeze(isOpaque: isOpaque)
            if decodeSize != target { bitmap = try bitmap.resized(to: target) }
            image = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .webp)
        }
        image.orientation = orientation
        image.isOrientationApplied = image.orientation == .up
        ColorManagement.apply(iccProfile(bytes), to: &image, options: options)
        if options.appliesOrientation { image = try image.applyingOrientation() }
        return image
    }

    /// The `ICCP` chunk of an extended (VP8X) file whose ICC flag is set; nil otherwise.
    static func iccProfile(_ bytes: UnsafeRawBufferPointer) -> Data? {
        extendedChunk(bytes, "ICCP", flag: 0x20).map { Data($0) }
    }

    /// The payload of the first `fourCC` chunk of an extended (VP8X) file whose VP8X `flag` bit
    /// says it has one; nil otherwise or when the chunks run past the data.
    static func extendedChunk(_ bytes: UnsafeRawBufferPointer, _ fourCC: StaticString, flag: UInt8)
        -> UnsafeRawBufferPointer?
    {
        guard bytes.count >= 21, bytes[12] == 0x56, bytes[13] == 0x50, bytes[14] == 0x38, bytes[15] == 0x58,
            bytes[20] & flag != 0
        else { return nil }
        let tag = fourCC.withUTF8Buffer { Array($0) }
        var offset = 12
        while offset + 8 <= bytes.count {
            let size =
                Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(
                    bytes[offset + 7]) << 24
            let start = offset + 8
            guard size <= bytes.count - start else { return nil }
            if bytes[offset..<offset + 4].elementsEqual(tag) {
                return UnsafeRawBufferPointer(rebasing: bytes[start..<start + size])
            }
            offset = start + size + (size & 1)
        }
        return nil
    }

    static func error(_ status: VP8StatusCode, _ what: String) -> ImageError {
        switch status {
        case VP8_STATUS_NOT_ENOUGH_DATA: ImageError(.truncatedData, "\(what): the data ends early")
        case VP8_STATUS_UNSUPPORTED_FEATURE: ImageError(.unsupportedFormat, "\(what): unsupported feature")
        case VP8_STATUS_OUT_OF_MEMORY: ImageError(.internalError, "\(what): out of memory")
        default: ImageError(.badImageData, "\(what): corrupt bitstream (status \(status.rawValue))")
        }
    }

    /// Every frame through ImageKit's compositor (``WebPAnimation/drawNextFrame(_:state:show:)``,
    /// libwebp's `WebPAnimDecoder` pixel for pixel): each frame's bitstream is decoded straight
    /// onto one canvas, which is copied (or resampled) once per frame, the last one handed over
    /// without a copy. `WebPAnimDecoder` copies the whole canvas twice per frame on top of that
    /// (the disposed previous canvas in and out), which is most of an animation's decode time
    /// when its frames are small rectangles.
    private static func decodeAnimation(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions)
        throws(ImageError) -> DecodedImage
    {
        let animation = try WebPAnimation(bytes)
        let frameCount = options.firstFrameOnly ? 1 : animation.frames.count
        let canvasSize = PixelSize(width: animation.width, height: animation.height)
        let target = DecodeTarget.size(for: canvasSize, frames: frameCount, options: options)
        try options.limits.checkPixels(width: canvasSize.width, height: canvasSize.height)
        try options.limits.check(width: target.width, height: target.height, frames: frameCount)

        var state = try WebPRunState(animation)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(frameCount)
        for index in 0..<frameCount {
            let keepsCanvas = index == frameCount - 1 && !animation.frames[index].disposesToBackground
            var shown: Bitmap?
            let duration = try animation.drawNextFrame(bytes, state: &state) {
                (canvas: borrowing AnimationCanvas) throws(ImageError) in
                if !keepsCanvas { shown = try canvas.frame(size: target) }
            }
            if let shown {
                frames.append(ImageFrame(bitmap: shown, duration: duration))
            } else {
                var last = state.finish()
                if target != canvasSize { last = try last.resized(to: target) }
                frames.append(ImageFrame(bitmap: last, duration: duration))
                break
            }
        }
        if frames.count == 1 { frames[0].duration = 0 }
        return DecodedImage(frames: frames, loopCount: frames.count > 1 ? animation.loopCount : 1, format: .webp)
    }

    /// The size the RIFF header promises (8 + its length field).
    static func riffDeclaredSize(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard bytes.count >= 8 else { return Int.max }
        return 8 + (Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24)
    }

    /// The orientation in the `EXIF` chunk, when the VP8X header says there is one.
    static func exifOrientation(_ bytes: UnsafeRawBufferPointer) -> ImageOrientation? {
        extendedChunk(bytes, "EXIF", flag: 0x08).flatMap { ExifReader.orientation(exifPayload: $0) }
    }

    // MARK: - Encoding

    /// Writes WebP, lossy or lossless, animated when the image has frames.
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard format == .webp else { throw ImageError(.encodingFailed, "WebPCoder cannot encode \(format)") }
        let image = options.firstFrameOnly ? image : try image.loadingAllFrames()
        guard let first = image.frames.first else { throw ImageError(.zeroPixels, "the image has no frames") }
        guard first.bitmap.width <= 16383, first.bitmap.height <= 16383 else {
            throw ImageError(
                .encodingFailed,
                "WebP cannot hold \(first.bitmap.width)×\(first.bitmap.height) pixels (max 16383 per side)")
        }
        let quality = Float(min(max(options.quality, 0), 1) * 100)
        if image.frames.count > 1 && !options.firstFrameOnly {
            return try encodeAnimation(image, quality: quality, lossless: options.lossless)
        }
        let bitmap = first.bitmap
        var output: UnsafeMutablePointer<UInt8>?
        let size = bitmap.withUnsafeBytes { pixels in
            let rgba = pixels.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return options.lossless
                ? WebPEncodeLosslessRGBA(
                    rgba, Int32(bitmap.width), Int32(bitmap.height), Int32(bitmap.bytesPerRow), &output)
                : WebPEncodeRGBA(
                    rgba, Int32(bitmap.width), Int32(bitmap.height), Int32(bitmap.bytesPerRow), quality, &output)
        }
        guard size > 0, let output else { throw ImageError(.encodingFailed, "WebP encoding failed") }
        let data = Data(bytesNoCopy: output, count: size, deallocator: .custom { pointer, _ in WebPFree(pointer) })
        return image.colorProfile.map { ColorProfileEmbedding.webp(data, $0) } ?? data
    }

    private func encodeAnimation(_ image: DecodedImage, quality: Float, lossless: Bool) throws(ImageError) -> Data {
        let width = image.width, height = image.height
        var encoderOptions = WebPAnimEncoderOptions()
        guard WebPAnimEncoderOptionsInit(&encoderOptions) != 0 else {
            throw ImageError(.internalError, "libwebp version mismatch")
        }
        encoderOptions.anim_params.loop_count = Int32(max(0, min(image.loopCount, 65535)))
        guard let encoder = WebPAnimEncoderNew(Int32(width), Int32(height), &encoderOptions) else {
            throw ImageError(.encodingFailed, "WebP: could not create an animation encoder")
        }
        defer { WebPAnimEncoderDelete(encoder) }
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else { throw ImageError(.internalError, "libwebp version mismatch") }
        config.lossless = lossless ? 1 : 0
        config.quality = lossless ? 75 : quality
        var timestamp: Int32 = 0
        for frame in image.frames {
            guard frame.bitmap.width == width, frame.bitmap.height == height else {
                throw ImageError(.encodingFailed, "WebP frames must all be \(width)×\(height)")
            }
            var picture = WebPPicture()
            guard WebPPictureInit(&picture) != 0 else { throw ImageError(.internalError, "libwebp version mismatch") }
            picture.width = Int32(width)
            picture.height = Int32(height)
            picture.use_argb = 1
            let imported = frame.bitmap.withUnsafeBytes { pixels in
                WebPPictureImportRGBA(
                    &picture, pixels.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(frame.bitmap.bytesPerRow))
            }
            defer { WebPPictureFree(&picture) }
            guard imported != 0, WebPAnimEncoderAdd(encoder, &picture, timestamp, &config) != 0 else {
                throw ImageError(.encodingFailed, "WebP: could not add frame")
            }
            timestamp += Int32(max(1, (frame.duration * 1000).rounded()))
        }
        guard WebPAnimEncoderAdd(encoder, nil, timestamp, nil) != 0 else {
            throw ImageError(.encodingFailed, "WebP: could not finish the animation")
        }
        var assembled = WebPData()
        guard WebPAnimEncoderAssemble(encoder, &assembled) != 0, let bytes = assembled.bytes else {
            throw ImageError(.encodingFailed, "WebP: could not assemble the animation")
        }
        defer { WebPDataClear(&assembled) }
        return Data(bytes: bytes, count: assembled.size)
    }
}
