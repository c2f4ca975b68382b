#if AVIF
internal import CAVIF
import Foundation
import Synchronization

/// AVIF decoding and encoding with libavif (dav1d decodes, libaom encodes).
///
/// Decodes stills and image sequences (every frame, with its duration), alpha, 8/10/12-bit
/// images (reduced to 8 bits), monochrome, grids, and applies the `clap` crop, then `irot`
/// and `imir`, in the order the format defines; an EXIF orientation inside is not applied (the
/// file's own transforms are). The ICC profile is converted to sRGB (nclx colour is libavif's
/// YUV-to-RGB matrix and taken as sRGB primaries), except that a PQ or HLG `nclx` transfer is
/// decoded at full depth and tone-mapped to sRGB with its primaries (``DecodedImage/hdrTransfer``).
/// Tracks of an image sequence's movie other than its pictures (audio, metadata) are ignored. libavif 0.11 does not report
/// a sequence's loop count: animations loop forever, as browsers play them. One thread per decode.
///
/// Encoding writes a still (the first frame) in 4:2:0, 8 bits, with alpha when the image has
/// any, and embeds ``DecodedImage/colorProfile`` when one is carried. ``ImageEncodingOptions``'s
/// `quality` maps to the quantizer (1 = lossless-grade 0, 0 = 63), `lossless` writes 4:4:4 at
/// quantizer 0 with identity matrix coefficients, and ``ImageEncodingOptions/speed`` picks
/// libaom's speed (default ``defaultSpeed``). Built with the `AVIF` package trait.
public struct AVIFCoder: ImageCoding {
    /// libaom's speed when the options name none: 8 of 0…10, measured for a server that makes
    /// thumbnails (see the README's encoder notes).
    public static let defaultSpeed = 8

    /// The AVIF coder (libavif).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .avif }
    public func canEncode(_ format: ImageFormat) -> Bool { format == .avif }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try Self.imageTracksOnly(data).withImageBytes { bytes throws(ImageError) in
            try Self.decode(bytes, options: options)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        let decoder = try makeDecoder(bytes)
        defer { avifDecoderDestroy(decoder) }
        guard let first = decoder.pointee.image else { throw ImageError(.badImageData, "AVIF: no image") }
        #if HEIF
        // libavif 0.11 drops the alpha of a still whose colour is a grid and whose alpha is not
        // (fixed in libavif 1.0); libheif reads it. Asked only of stills libavif calls opaque.
        if decoder.pointee.imageCount == 1, decoder.pointee.alphaPresent == 0, BMFFBoxes.mayHaveGridItem(bytes),
            HEIFCoder.primaryImageHasAlpha(bytes)
        {
            return try HEIFCoder.decode(bytes, format: .avif, options: options)
        }
        #endif
        let stored = PixelSize(width: Int(first.pointee.width), height: Int(first.pointee.height))
        try options.limits.checkPixels(width: stored.width, height: stored.height)
        let frameCount = options.firstFrameOnly ? 1 : max(1, Int(decoder.pointee.imageCount))
        // The displayed size: after clap, then a quarter turn.
        let geometry = Geometry(first.pointee)
        let shown = geometry.displayedSize(stored)
        let target = DecodeTarget.size(for: shown, frames: frameCount, options: options)
        try options.limits.check(width: target.width, height: target.height, frames: frameCount)
        // libavif's own planes: YUV (up to 2 bytes a sample, 3 planes) and alpha, per frame.
        let depthBytes = first.pointee.depth > 8 ? 2 : 1
        try options.limits.checkWorking(
            stored.pixelCount * (3 + 1) * depthBytes + stored.pixelCount * 4,
            outputBytes: target.pixelCount * 4 * frameCount, "the \(stored) AVIF planes")
        let hasAlpha = decoder.pointee.alphaPresent != 0
        let icc = first.pointee.icc.size > 0 ? Data(bytes: first.pointee.icc.data, count: first.pointee.icc.size) : nil
        let toneMapper = Self.toneMapper(first.pointee)
        if toneMapper != nil {
            // libavif's planes as subsampled (4:2:0 holds half a chroma sample a pixel), and the
            // band of 16-bit RGB(A) samples the tone mapper reads.
            let chromaSamples: Int
            switch first.pointee.yuvFormat {
            case AVIF_PIXEL_FORMAT_YUV420: chromaSamples = stored.pixelCount / 2
            case AVIF_PIXEL_FORMAT_YUV422: chromaSamples = stored.pixelCount
            case AVIF_PIXEL_FORMAT_YUV400: chromaSamples = 0
            default: chromaSamples = stored.pixelCount * 2
            }
            let planes = (stored.pixelCount * (hasAlpha ? 2 : 1) + chromaSamples) * depthBytes
            let band = Self.toneMappingBand(stored: stored, channels: hasAlpha ? 4 : 3, factor: 1)
            try options.limits.checkWorking(
                planes + band.samples * 2,
                outputBytes: target.pixelCount * 4 * frameCount, "the \(stored) HDR AVIF planes and samples")
        }

        // A thumbnail of an HDR image is reduced in 16 bits before it is mapped (not with a
        // `clap` crop, whose rectangle is in the stored pixels).
        let hdrReduction =
            toneMapper != nil && geometry.crop == nil ? HDRToneMapper.reductionFactor(from: shown, to: target) : 1
        var frames: [ImageFrame] = []
        frames.reserveCapacity(frameCount)
        while frames.count < frameCount {
            let result = avifDecoderNextImage(decoder)
            if result == AVIF_RESULT_NO_IMAGES_REMAINING, !frames.isEmpty { break }
            try check(result, decoder, "decoding frame \(frames.count)")
            var bitmap = try currentFrame(
                decoder, stored: stored, geometry: geometry, hasAlpha: hasAlpha, toneMapper: toneMapper,
                reducingBy: hdrReduction, index: frames.count)
            if bitmap.size != target { bitmap = try bitmap.resized(to: target) }
            frames.append(
                ImageFrame(bitmap: bitmap, duration: frameCount > 1 ? decoder.pointee.imageTiming.duration : 0))
        }
        var decoded = DecodedImage(frames: frames, loopCount: frames.count > 1 ? 0 : 1, format: .avif)
        if let toneMapper {
            decoded.hdrTransfer = toneMapper.key.transfer
        } else {
            ColorManagement.apply(icc, to: &decoded, options: options)
        }
        decoded.hasGainMap = GainMapDetection.isPresent(in: bytes, format: .avif)
        return decoded
    }

    /// The displayed size (after `clap`, `irot`), as ``decode(_:options:)`` returns it, from the
    /// parsed boxes: no frame is decoded.
    static func displayedSize(_ bytes: UnsafeRawBufferPointer) -> PixelSize? {
        func parsed(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> PixelSize? {
            let decoder = try makeDecoder(bytes)
            defer { avifDecoderDestroy(decoder) }
            guard let first = decoder.pointee.image else { return nil }
            let stored = PixelSize(width: Int(first.pointee.width), height: Int(first.pointee.height))
            return Geometry(first.pointee).displayedSize(stored)
        }
        guard !BMFFBoxes.foreignTracks(in: bytes).isEmpty else { return try? parsed(bytes) }
        return try? imageTracksOnly(Data(bytes)).withImageBytes { bytes throws(ImageError) in try parsed(bytes) }
    }

    /// A libavif decoder over `bytes` (which must outlive it), parsed: one thread, no EXIF or XMP,
    /// lenient. libavif's own size limit (16384 × 16384) stays as a backstop: parsing allocates no
    /// pixels, and ImageKit's limits are checked against the parsed header by the caller.
    static func makeDecoder(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> UnsafeMutablePointer<avifDecoder> {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the AVIF data is empty")
        }
        guard let decoder = avifDecoderCreate() else { throw ImageError(.internalError, "libavif: out of memory") }
        decoder.pointee.maxThreads = 1
        decoder.pointee.ignoreExif = 1
        decoder.pointee.ignoreXMP = 1
        decoder.pointee.strictFlags = AVIF_STRICT_DISABLED.rawValue
        do throws(ImageError) {
            try check(
                avifDecoderSetIOMemory(decoder, base.assumingMemoryBound(to: UInt8.self), bytes.count), decoder,
                "reading")
            try check(avifDecoderParse(decoder), decoder, "parsing")
        } catch {
            avifDecoderDestroy(decoder)
            throw error
        }
        return decoder
    }

    /// The tone mapper of a PQ or HLG image (its `nclx` transfer), nil for SDR. libavif 0.11
    /// does not read `clli`: the peak is the default one.
    static func toneMapper(_ image: avifImage) -> HDRToneMapper? {
        guard let transfer = HDRTransfer(cicpTransfer: Int(image.transferCharacteristics)) else { return nil }
        return HDRToneMapper.mapper(
            transfer: transfer, primaries: ColorPrimaries(cicp: Int(image.colorPrimaries)),
            maxCode: (1 << max(10, Int(image.depth))) - 1, peakNits: nil)
    }

    /// The frame libavif just decoded, as RGBA of the displayed geometry (not yet colour managed;
    /// tone-mapped to sRGB by `toneMapper` when there is one).
    static func currentFrame(
        _ decoder: UnsafeMutablePointer<avifDecoder>, stored: PixelSize, geometry: Geometry, hasAlpha: Bool,
        toneMapper: HDRToneMapper?, reducingBy factor: Int = 1, index: Int
    ) throws(ImageError) -> Bitmap {
        guard let image = decoder.pointee.image, Int(image.pointee.width) == stored.width,
            Int(image.pointee.height) == stored.height
        else {
            throw ImageError(.badImageData, "AVIF: frame \(index) changes size")
        }
        if let toneMapper {
            return try geometry.apply(
                to: toneMapped(
                    image, stored: stored, hasAlpha: hasAlpha, toneMapper: toneMapper, factor: factor,
                    decoder: decoder, index: index))
        }
        let buffer = try PixelBuffer(width: stored.width, height: stored.height)
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.pixels = buffer.row(0)
        rgb.rowBytes = UInt32(buffer.bytesPerRow)
        try check(avifImageYUVToRGB(image, &rgb), decoder, "converting frame \(index) to RGB")
        return try geometry.apply(to: buffer.freeze(isOpaque: !hasAlpha))
    }

    /// The bytes of 16-bit samples converted at a time for the tone mapper: 4 MB rather than a
    /// 12 MP frame's 72 MB (and their page faults); narrower bands cost more in libavif's
    /// per-call setup and the rows converted twice than they save (`bench --filter hdr`).
    /// Tests narrow it to compare bands with the whole frame.
    static let toneMappingBandBytes = Atomic<Int>(4 << 20)

    /// The rows of one tone-mapping band (`step`: even, so that every view starts on a chroma
    /// row, and a multiple of the reduction factor) and the samples its buffer holds, with the
    /// two rows above and the one below converted with it: a kept row's chroma comes from its
    /// chroma row and the next one up or down.
    static func toneMappingBand(stored: PixelSize, channels: Int, factor: Int) -> (step: Int, samples: Int) {
        let stride = stored.width * channels
        let rows = max(2, toneMappingBandBytes.load(ordering: .relaxed) / max(1, stride * 2)) & ~1
        let factor = max(1, factor)
        let rounded = (rows + factor - 1) / factor * factor
        let step = rounded % 2 == 0 ? rounded : rounded * 2
        return (step, (min(step, stored.height) + 3) * stride)
    }

    /// An HDR frame converted to 16-bit RGB(A) a band of rows at a time and tone-mapped band by
    /// band, never whole: each band is a view of libavif's planes (`avifImageSetViewRect`)
    /// with two rows more above and one below, because 4:2:0 chroma is upsampled from the
    /// neighbouring chroma rows and a view's edge rows are upsampled as an image's edges are.
    /// The rows kept are converted exactly as in the whole frame.
    private static func toneMapped(
        _ image: UnsafeMutablePointer<avifImage>, stored: PixelSize, hasAlpha: Bool, toneMapper: HDRToneMapper,
        factor: Int, decoder: UnsafeMutablePointer<avifDecoder>, index: Int
    ) throws(ImageError) -> Bitmap {
        // libavif writes the samples at the image's depth (at least 10 bits), which the mapper's
        // tables are indexed by.
        let channels = hasAlpha ? 4 : 3
        let stride = stored.width * channels
        let above = 2, below = 1
        let (step, capacity) = toneMappingBand(stored: stored, channels: channels, factor: factor)
        // libavif writes every sample it is given: no zero fill first.
        var samples = [UInt16](unsafeUninitializedCapacity: capacity) { _, initialized in initialized = capacity }
        return try samples.withUnsafeMutableBufferPointer { samples throws(ImageError) in
            try toneMapper.map(
                width: stored.width, height: stored.height, channels: channels, isOpaque: !hasAlpha,
                reducingBy: factor, bandRows: step
            ) { y, rows throws(ImageError) in
                let top = max(0, y - above)
                let bottom = min(stored.height, y + rows + below)
                var rect = avifCropRect(x: 0, y: UInt32(top), width: UInt32(stored.width), height: UInt32(bottom - top))
                var view = avifImage()
                try check(avifImageSetViewRect(&view, image, &rect), decoder, "viewing rows of frame \(index)")
                var rgb = avifRGBImage()
                avifRGBImageSetDefaults(&rgb, &view)
                rgb.format = hasAlpha ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB
                rgb.depth = UInt32(max(10, image.pointee.depth))
                rgb.pixels = UnsafeMutableRawPointer(samples.baseAddress!).assumingMemoryBound(to: UInt8.self)
                rgb.rowBytes = UInt32(stride * 2)
                try check(avifImageYUVToRGB(&view, &rgb), decoder, "converting frame \(index) to RGB")
                return (UnsafePointer(samples.baseAddress! + (y - top) * stride), stride)
            }
        }
    }

    /// `clap`, `irot` and `imir` of an image.
    struct Geometry {
        var crop: PixelRect?
        var quarterTurns = 0
        var mirror: UInt8?

        init(_ image: avifImage) {
            let flags = image.transformFlags
            if flags & AVIF_TRANSFORM_CLAP.rawValue != 0 {
                var rect = avifCropRect()
                var diagnostics = avifDiagnostics()
                var clap = image.clap
                if avifCropRectConvertCleanApertureBox(
                    &rect, &clap, image.width, image.height, image.yuvFormat, &diagnostics) != 0,
                    rect.width > 0, rect.height > 0, rect.width != image.width || rect.height != image.height
                {
                    crop = PixelRect(x: Int(rect.x), y: Int(rect.y), width: Int(rect.width), height: Int(rect.height))
                }
            }
            if flags & AVIF_TRANSFORM_IROT.rawValue != 0 { quarterTurns = Int(image.irot.angle & 3) }
            if flags & AVIF_TRANSFORM_IMIR.rawValue != 0 { mirror = image.imir.mode }
        }

        func displayedSize(_ stored: PixelSize) -> PixelSize {
            let cropped = crop.map { PixelSize(width: $0.width, height: $0.height) } ?? stored
            return quarterTurns % 2 == 1 ? cropped.transposed : cropped
        }

        func apply(to bitmap: Bitmap) throws(ImageError) -> Bitmap {
            var result = bitmap
            if let crop { result = try result.cropped(to: crop) }
            if quarterTurns != 0 { result = try result.rotated(quarterTurns: quarterTurns) }
            if let mirror { result = try result.flipped(horizontally: mirror == 1, vertically: mirror == 0) }
            return result
        }
    }

    static func check(_ result: avifResult, _ decoder: UnsafeMutablePointer<avifDecoder>?, _ what: String)
        throws(ImageError)
    {
        guard result != AVIF_RESULT_OK else { return }
        var message = String(cString: avifResultToString(result))
        if let decoder {
            let detail = withUnsafeBytes(of: decoder.pointee.diag.error) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !detail.isEmpty { message += ": \(detail)" }
        }
        switch result {
        case AVIF_RESULT_TRUNCATED_DATA, AVIF_RESULT_NO_IMAGES_REMAINING, AVIF_RESULT_WAITING_ON_IO:
            throw ImageError(.truncatedData, "AVIF \(what): \(message)")
        case AVIF_RESULT_NOT_IMPLEMENTED, AVIF_RESULT_NO_CODEC_AVAILABLE, AVIF_RESULT_UNSUPPORTED_DEPTH:
            throw ImageError(.unsupportedFormat, "AVIF \(what): \(message)")
        case AVIF_RESULT_OUT_OF_MEMORY:
            throw ImageError(.internalError, "AVIF \(what): \(message)")
        default:
            if message.contains("imageSizeLimit") || message.contains("size limit") {
                throw ImageError(.decompressionBomb, "AVIF \(what): \(message)")
            }
            throw ImageError(.badImageData, "AVIF \(what): \(message)")
        }
    }

    // MARK: - Encoding

    /// Writes AVIF (see the type's description for the settings).
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard format == .avif else { throw ImageError(.encodingFailed, "AVIFCoder writes AVIF, not \(format)") }
        let frames = options.firstFrameOnly ? [image.frames[0]] : image.frames
        // Alpha is decided once for a sequence: libavif wants every frame alike.
        let opaque = frames.allSatisfy { $0.bitmap.isOpaque || $0.bitmap.scanIsOpaque() }
        guard let encoder = avifEncoderCreate() else { throw ImageError(.internalError, "libavif: out of memory") }
        defer { avifEncoderDestroy(encoder) }
        encoder.pointee.maxThreads = 1
        encoder.pointee.speed = Int32(max(0, min(10, options.speed ?? Self.defaultSpeed)))
        let lossless = options.lossless
        let quantizer = lossless ? 0 : Int32((63 * (1 - max(0, min(1, options.quality)))).rounded())
        encoder.pointee.minQuantizer = quantizer
        encoder.pointee.maxQuantizer = quantizer
        encoder.pointee.minQuantizerAlpha = lossless ? 0 : max(0, quantizer - 8)
        encoder.pointee.maxQuantizerAlpha = lossless ? 0 : max(0, quantizer - 8)
        var output = avifRWData()
        defer { avifRWDataFree(&output) }
        if frames.count == 1 {
            let avif = try yuvImage(frames[0].bitmap, profile: image.colorProfile, lossless: lossless, opaque: opaque)
            defer { avifImageDestroy(avif) }
            try encodeCheck(avifEncoderWrite(encoder, avif, &output), "encoding")
        } else {
            // An image sequence in milliseconds. libavif 0.11 writes no loop count: players loop
            // a sequence forever (what a GIF with loop 0, nearly every animated GIF, asks).
            encoder.pointee.timescale = 1000
            for frame in frames {
                let avif = try yuvImage(frame.bitmap, profile: image.colorProfile, lossless: lossless, opaque: opaque)
                defer { avifImageDestroy(avif) }
                let duration = UInt64(max(1, (frame.duration * 1000).rounded()))
                try encodeCheck(
                    avifEncoderAddImage(encoder, avif, duration, avifAddImageFlags(AVIF_ADD_IMAGE_FLAG_NONE.rawValue)),
                    "adding a frame")
            }
            try encodeCheck(avifEncoderFinish(encoder, &output), "finishing the sequence")
        }
        guard let data = output.data, output.size > 0 else {
            throw ImageError(.encodingFailed, "AVIF: the encoder wrote nothing")
        }
        return Data(bytes: data, count: output.size)
    }

    /// One frame as the YUV image libavif encodes (4:2:0, or 4:4:4 identity for lossless).
    private func yuvImage(_ bitmap: Bitmap, profile: ColorProfile?, lossless: Bool, opaque: Bool) throws(ImageError)
        -> UnsafeMutablePointer<avifImage>
    {
        guard
            let avif = avifImageCreate(
                UInt32(bitmap.width), UInt32(bitmap.height), 8,
                lossless ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420)
        else {
            throw ImageError(.internalError, "libavif: out of memory")
        }
        if lossless {
            avif.pointee.matrixCoefficients = UInt16(AVIF_MATRIX_COEFFICIENTS_IDENTITY)
            avif.pointee.yuvRange = AVIF_RANGE_FULL
        }
        if let profile {
            profile.iccData.withUnsafeBytes {
                avifImageSetProfileICC(avif, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count)
            }
        }
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, avif)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.ignoreAlpha = opaque ? 1 : 0
        rgb.pixels = bitmap.baseAddress.assumingMemoryBound(to: UInt8.self)
        rgb.rowBytes = UInt32(bitmap.bytesPerRow)
        let converted = avifImageRGBToYUV(avif, &rgb)
        guard converted == AVIF_RESULT_OK else {
            avifImageDestroy(avif)
            throw ImageError(
                .encodingFailed, "AVIF converting to YUV: \(String(cString: avifResultToString(converted)))")
        }
        return avif
    }

    private func encodeCheck(_ result: avifResult, _ what: String) throws(ImageError) {
        guard result != AVIF_RESULT_OK else { return }
        throw ImageError(.encodingFailed, "AVIF \(what): \(String(cString: avifResultToString(result)))")
    }
}
#endif
