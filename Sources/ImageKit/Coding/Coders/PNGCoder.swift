internal import CImageCodecs
import Foundation

/// PNG and APNG decoding and encoding.
///
/// Every colour type and bit depth decodes to RGBA8 (palette and gray expanded, tRNS to alpha,
/// 16-bit samples reduced to their high byte, interlacing resolved, no gamma correction). A
/// whole PNG goes through the one-shot fast path (libdeflate inflate, SSE2 unfilter: about twice
/// libpng's speed, the same pixels) unless the file needs libpng's rules (damage, unusual
/// chunks), then through libpng; large scaled decodes stream rows through libpng. Encoding
/// uses ImageKit's libdeflate writer (libpng's filter heuristic, one compression call). An
/// APNG decodes to its animation frames composited on the IHDR-sized canvas; a default image
/// that is not part of the animation is returned only with
/// ``ImageDecodingOptions/firstFrameOnly``, as a viewer that does not animate shows it. A still
/// whose `cICP` chunk says PQ or HLG is read at 16 bits and tone-mapped to sRGB
/// (``DecodedImage/hdrTransfer``).
///
/// An animated image encodes as an APNG (every frame, durations and loop count kept) unless
/// ``ImageEncodingOptions/firstFrameOnly`` is given.
public struct PNGCoder: ImageCoding {
    /// The PNG and APNG coder (libpng).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .png }
    public func canEncode(_ format: ImageFormat) -> Bool { format == .png }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in
            if let hdr = PNGChunks.hdrColor(bytes), !PNGChunks.hasAnimationControl(bytes) {
                return try Self.decodeHDR(bytes, hdr, options: options)
            }
            var image = try Self.decodePixels(bytes, options: options)
            ColorManagement.apply(PNGChunks.iccProfile(bytes), to: &image, options: options)
            return image
        }
    }

    /// The image as stored, before colour management.
    private static func decodePixels(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        if PNGChunks.hasAnimationControl(bytes), let animation = APNGAnimation(bytes),
            !(options.firstFrameOnly && animation.defaultImageHidden)
        {
            return try Self.decodeAnimation(animation, bytes: bytes, options: options)
        }
        // Scaled decodes of large non-interlaced PNGs stream: rows are shrunk as libpng reads
        // them, so the full-size image is never held. Up to `streamingThresholdBytes` of
        // RGBA the fast path's full decode + resample is faster (1.4–2× on 3 MP photos) for
        // a bounded amount of memory.
        if options.scalesDown, bytes.count >= 29, bytes[28] == 0, PNGChunks.u32(bytes, 12) == PNGChunks.IHDR {
            let full = PixelSize(width: Int(PNGChunks.u32(bytes, 16)), height: Int(PNGChunks.u32(bytes, 20)))
            let target = DecodeTarget.size(for: full, options: options)
            let (fullBytes, overflow) = full.width.multipliedReportingOverflow(by: full.height * 4)
            if target != full, full.width > 0, full.height > 0, overflow || fullBytes > Self.streamingThresholdBytes {
                let bitmap = try Self.decodeStreaming(bytes, target: target, limits: options.limits)
                return DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png)
            }
        }
        var bitmap = try Self.decodeStill(bytes, limits: options.limits, ignoreCRC: false)
        let target = DecodeTarget.size(for: PixelSize(width: bitmap.width, height: bitmap.height), options: options)
        if target.width != bitmap.width || target.height != bitmap.height { bitmap = try bitmap.resized(to: target) }
        return DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png)
    }

    /// Scaled decodes of sources larger than this (RGBA bytes, 16 MiB ≈ 4 MP) stream through
    /// libpng, holding a few rows; smaller ones are decoded whole by the fast path and resampled,
    /// which is faster and holds at most this much plus the inflated stream.
    static let streamingThresholdBytes = 16 << 20

    /// Decodes one complete PNG stream (the default image): the fast path when it takes the
    /// file, else libpng.
    /// (`usesFastPath` false: libpng only, for tests that compare the two.)
    static func decodeStill(
        _ bytes: UnsafeRawBufferPointer, limits: DecodingLimits, ignoreCRC: Bool,
        usesFastPath: Bool = true
    ) throws(ImageError) -> Bitmap {
        guard bytes.baseAddress != nil, bytes.count > 0 else { throw ImageError(.emptyData, "the PNG data is empty") }
        // IHDR's method bytes: libpng accepts some values the PNG specification does not.
        if bytes.count >= 29, PNGChunks.u32(bytes, 12) == PNGChunks.IHDR {
            guard bytes[26] == 0, bytes[27] == 0, bytes[28] <= 1 else {
                throw ImageError(.badImageData, "PNG: unknown compression, filter or interlace method in IHDR")
            }
        }
        if !ignoreCRC, let defect = PNGChunks.headerDefect(bytes) { throw ImageError(.badImageData, "PNG: \(defect)") }
        if usesFastPath, let bitmap = try decodeStillFast(bytes, limits: limits, checksCRC: !ignoreCRC) {
            return bitmap
        }
        return try decodeStillWithLibpng(bytes, limits: limits, ignoreCRC: ignoreCRC)
    }

    /// The one-shot path (`ik_png_fast.c`: libdeflate inflate, SSE2 unfilter, the same pixels as
    /// libpng); nil when it leaves the file to libpng (damage, chunks libpng treats specially,
    /// APNG). Its inflated stream counts against ``DecodingLimits/maxWorkingBytes``.
    static func decodeStillFast(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits, checksCRC: Bool)
        throws(ImageError) -> Bitmap?
    {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the PNG data is empty")
        }
        return try decodeRGBA(limits: limits, checksWorkingBytes: true) { alloc, context, info, message, count in
            ik_png_fast_decode(base, bytes.count, checksCRC ? 1 : 0, alloc, context, info, message, count)
        }
    }

    /// A PNG whose `cICP` chunk says PQ or HLG: libpng's 16-bit samples, reduced towards the
    /// target, tone-mapped to sRGB, then scaled the rest of the way. (An animated one is decoded as SDR: its frames go through the
    /// 8-bit compositor.)
    static func decodeHDR(
        _ bytes: UnsafeRawBufferPointer, _ hdr: (transfer: HDRTransfer, primaries: Int, peakNits: Double?),
        options: ImageDecodingOptions
    ) throws(ImageError) -> DecodedImage {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the PNG data is empty")
        }
        final class Samples {
            let limits: DecodingLimits
            var storage: UnsafeMutableBufferPointer<UInt16>?
            var error: ImageError?
            init(limits: DecodingLimits) { self.limits = limits }
            deinit { storage?.deallocate() }
        }
        let samples = Samples(limits: options.limits)
        var info = ik_png_info()
        var message = [CChar](repeating: 0, count: 256)
        let status = withExtendedLifetime(samples) {
            ik_png_decode_rgba16(
                base, bytes.count,
                { context, info, stride in
                    let samples = Unmanaged<Samples>.fromOpaque(context!).takeUnretainedValue()
                    let width = Int(info.pointee.width), height = Int(info.pointee.height)
                    do throws(ImageError) {
                        try samples.limits.check(width: width, height: height)
                        try samples.limits.checkWorking(
                            width * height * 8, outputBytes: width * height * 4, "the HDR PNG's 16-bit samples")
                    } catch {
                        samples.error = error
                        return nil
                    }
                    let storage = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: width * height * 4)
                    samples.storage = storage
                    stride.pointee = width * 8
                    return UnsafeMutableRawPointer(storage.baseAddress)
                }, Unmanaged.passUnretained(samples).toOpaque(), &info, &message, message.count)
        }
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch status {
        case IK_OK: break
        case IK_ERR_REFUSED: throw samples.error ?? ImageError(.internalError, "could not allocate the PNG's samples")
        case IK_ERR_TRUNCATED: throw ImageError(.truncatedData, "PNG: \(text)")
        case IK_ERR_INTERNAL: throw ImageError(.internalError, "PNG: \(text.isEmpty ? "out of memory" : text)")
        default: throw ImageError(.badImageData, "PNG: \(text.isEmpty ? "corrupt data" : text)")
        }
        guard let storage = samples.storage else {
            throw ImageError(.internalError, "the PNG decoder returned no pixels")
        }
        let width = Int(info.width), height = Int(info.height)
        let mapper = HDRToneMapper.mapper(
            transfer: hdr.transfer, primaries: ColorPrimaries(cicp: hdr.primaries), maxCode: 65535,
            peakNits: hdr.peakNits)
        let target = DecodeTarget.size(for: PixelSize(width: width, height: height), options: options)
        var bitmap = try withExtendedLifetime(samples) { () throws(ImageError) -> Bitmap in
            try mapper.map(
                storage.baseAddress!, stride: width * 4, channels: 4, width: width, height: height,
                isOpaque: info.has_alpha == 0,
                reducingBy: HDRToneMapper.reductionFactor(from: PixelSize(width: width, height: height), to: target))
        }
        if target != bitmap.size { bitmap = try bitmap.resized(to: target) }
        var image = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png)
        image.hdrTransfer = hdr.transfer
        return image
    }

    /// libpng's decode of a whole PNG.
    static func decodeStillWithLibpng(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits, ignoreCRC: Bool)
        throws(ImageError) -> Bitmap
    {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the PNG data is empty")
        }
        guard
            let bitmap = try decodeRGBA(
                limits: limits, checksWorkingBytes: false,
                { alloc, context, info, message, count in
                    ik_png_decode_rgba(base, bytes.count, ignoreCRC ? 1 : 0, alloc, context, info, message, count)
                })
        else {
            throw ImageError(.internalError, "libpng declined the PNG")
        }
        return bitmap
    }

    /// Runs a C decode that asks for its RGBA8 output through an `ik_png_alloc_fn`, checking the
    /// limits there, and maps its status to a bitmap, nil (`IK_ERR_UNSUPPORTED`) or an error.
    private static func decodeRGBA(
        limits: DecodingLimits, checksWorkingBytes: Bool,
        _ decode: (
            ik_png_alloc_fn, UnsafeMutableRawPointer, UnsafeMutablePointer<ik_png_info>, UnsafeMutablePointer<CChar>,
            Int
        ) -> ik_status
    ) throws(ImageError) -> Bitmap? {
        final class Allocation {
            let limits: DecodingLimits
            let checksWorkingBytes: Bool
            var pixels: UnsafeMutableRawPointer?
            var bytesPerRow = 0
            var byteCount = 0
            var error: ImageError?
            init(limits: DecodingLimits, checksWorkingBytes: Bool) {
                self.limits = limits
                self.checksWorkingBytes = checksWorkingBytes
            }
            deinit { if let pixels { PixelMemory.deallocate(pixels, byteCount: byteCount) } }
        }
        let allocation = Allocation(limits: limits, checksWorkingBytes: checksWorkingBytes)
        var info = ik_png_info()
        var message = [CChar](repeating: 0, count: 256)
        let status = withExtendedLifetime(allocation) {
            message.withUnsafeMutableBufferPointer { message in
                decode(
                    { context, info, stride in
                        let allocation = Unmanaged<Allocation>.fromOpaque(context!).takeUnretainedValue()
                        let width = Int(info.pointee.width), height = Int(info.pointee.height)
                        do throws(ImageError) {
                            try allocation.limits.check(width: width, height: height)
                            if allocation.checksWorkingBytes {
                                try allocation.limits.checkWorking(
                                    Int(clamping: info.pointee.working_bytes), outputBytes: width * height * 4,
                                    "the PNG's inflated data")
                            }
                            let (pixels, bytesPerRow) = try PixelBuffer.allocate(width: width, height: height)
                            allocation.pixels = pixels
                            allocation.bytesPerRow = bytesPerRow
                            allocation.byteCount = bytesPerRow * height
                            stride.pointee = bytesPerRow
                            return pixels
                        } catch {
                            allocation.error = error
                            return nil
                        }
                    }, Unmanaged.passUnretained(allocation).toOpaque(), &info, message.baseAddress!, message.count)
            }
        }
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch status {
        case IK_OK:
            guard let pixels = allocation.pixels else {
                throw ImageError(.internalError, "the PNG decoder returned no pixels")
            }
            allocation.pixels = nil
            let buffer = PixelBuffer(
                adopting: pixels, width: Int(info.width), height: Int(info.height),
                bytesPerRow: allocation.bytesPerRow)
            return buffer.freeze(isOpaque: info.has_alpha == 0)
        case IK_ERR_UNSUPPORTED:
            return nil
        case IK_ERR_REFUSED:
            throw allocation.error ?? ImageError(.internalError, "could not allocate the PNG's pixels")
        case IK_ERR_TRUNCATED:
            throw ImageError(.truncatedData, "PNG: \(text)")
        case IK_ERR_INTERNAL:
            throw ImageError(.internalError, "PNG: \(text.isEmpty ? "out of memory" : text)")
        default:
            if text.contains("IHDR") || text.contains("bit depth") || text.contains("color type")
                || text.contains("dimensions")
            {
                if info.width == 0 || info.height == 0, text.contains("dimension") {
                    throw ImageError(.zeroPixels, "PNG: \(text)")
                }
            }
            throw ImageError(.badImageData, "PNG: \(text.isEmpty ? "corrupt data" : text)")
        }
    }

    /// Decodes row by row into a ``Resampler``: peak memory is the output plus a few rows.
    static func decodeStreaming(_ bytes: UnsafeRawBufferPointer, target: PixelSize, limits: DecodingLimits)
        throws(ImageError) -> Bitmap
    {
        if let defect = PNGChunks.headerDefect(bytes) { throw ImageError(.badImageData, "PNG: \(defect)") }
        guard bytes[26] == 0, bytes[27] == 0 else {
            throw ImageError(.badImageData, "PNG: unknown compression, filter or interlace method in IHDR")
        }
        final class Sink {
            let target: PixelSize
            let limits: DecodingLimits
            var resampler: Resampler?
            var error: ImageError?
            init(target: PixelSize, limits: DecodingLimits) { self.target = target; self.limits = limits }
        }
        let sink = Sink(target: target, limits: limits)
        var info = ik_png_info()
        var message = [CChar](repeating: 0, count: 256)
        let status = withExtendedLifetime(sink) {
            ik_png_decode_rows(
                bytes.baseAddress!, bytes.count,
                { context, info in
                    let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
                    let full = PixelSize(width: Int(info.pointee.width), height: Int(info.pointee.height))
                    do throws(ImageError) {
                        try sink.limits.checkPixels(width: full.width, height: full.height)
                        try sink.limits.check(width: sink.target.width, height: sink.target.height)
                        sink.resampler = try Resampler(
                            source: full, target: sink.target, isOpaque: info.pointee.has_alpha == 0)
                        return 0
                    } catch {
                        sink.error = error
                        return 1
                    }
                },
                { context, row, _ in
                    let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
                    sink.resampler?.push(row: row)
                }, Unmanaged.passUnretained(sink).toOpaque(), &info, &message, message.count)
        }
        let text = string(fromCBuffer: message)
        switch status {
        case IK_OK:
            guard let bitmap = sink.resampler?.finish() else { throw ImageError(.internalError, "PNG: no rows") }
            return bitmap
        case IK_ERR_REFUSED: throw sink.error ?? ImageError(.internalError, "PNG: refused")
        case IK_ERR_TRUNCATED: throw ImageError(.truncatedData, "PNG: \(text)")
        case IK_ERR_INTERNAL: throw ImageError(.internalError, "PNG: \(text.isEmpty ? "out of memory" : text)")
        default: throw ImageError(.badImageData, "PNG: \(text.isEmpty ? "corrupt data" : text)")
        }
    }

    /// Writes PNG, or APNG when the image has frames.
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard format == .png else { throw ImageError(.encodingFailed, "PNGCoder cannot encode \(format)") }
        if image.isAnimated && !options.firstFrameOnly {
            return try APNGEncoding.encode(try image.loadingAllFrames(), level: options.compressionLevel ?? 6)
        }
        guard let frame = image.frames.first else { throw ImageError(.zeroPixels, "the image has no frames") }
        let data = try Self.encode(
            frame.bitmap, keepAlpha: !frame.bitmap.scanIsOpaque(), level: options.compressionLevel ?? 6)
        return image.colorProfile.map { ColorProfileEmbedding.png(data, $0) } ?? data
    }

    static func encode(_ bitmap: Bitmap, keepAlpha: Bool, level: Int = 6) throws(ImageError) -> Data {
        try bitmap.withUnsafeBytes { pixels throws(ImageError) in
            try encodeRows(
                pixels.baseAddress!, width: bitmap.width, height: bitmap.height, bytesPerRow: bitmap.bytesPerRow,
                keepAlpha: keepAlpha, level: level)
        }
    }

    /// `width × height` RGBA8 pixels at `pixels` (rows `bytesPerRow` apart) as an 8-bit RGB or
    /// RGBA PNG: libpng's row-filter heuristic, one libdeflate compression at `level` (0...12).
    static func encodeRows(
        _ pixels: UnsafeRawPointer, width: Int, height: Int, bytesPerRow: Int, keepAlpha: Bool,
        level: Int
    ) throws(ImageError) -> Data {
        var output: UnsafeMutableRawPointer?
        var size = 0
        let status = ik_png_fast_encode(
            pixels, UInt32(width), UInt32(height), bytesPerRow, keepAlpha ? 1 : 0,
            Int32(min(max(level, 0), 12)), &output, &size)
        guard status == IK_OK, let output else {
            throw ImageError(.encodingFailed, "PNG: could not encode \(width)×\(height) pixels")
        }
        return Data(bytesNoCopy: output, count: size, deallocator: .custom { pointer, _ in ik_free(pointer) })
    }
}
