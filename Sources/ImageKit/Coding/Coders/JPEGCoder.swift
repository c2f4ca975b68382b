internal import CImageCodecs
internal import CTurboJPEG
import Foundation

/// JPEG decoding and encoding with libturbojpeg (the TurboJPEG 2.1 API).
///
/// Decodes baseline, progressive and arithmetic-coded 8-bit JPEGs, grayscale, and CMYK/YCCK
/// (Adobe-inverted or plain) to RGB. EXIF orientation is read and applied unless
/// ``ImageDecodingOptions/appliesOrientation`` is false. 12-bit and lossless JPEGs give
/// ``ImageError/Code/unsupportedFormat``.
public struct JPEGCoder: ImageCoding {
    /// The JPEG coder (libjpeg-turbo).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .jpeg }
    public func canEncode(_ format: ImageFormat) -> Bool { format == .jpeg }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in
            try Self.decode(bytes, options: options)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        guard bytes.count > 0, let base = bytes.baseAddress else {
            throw ImageError(.emptyData, "the JPEG data is empty")
        }
        let markers = JPEGMarkers(bytes)
        if let reason = markers.unsupportedReason { throw ImageError(.unsupportedFormat, reason) }

        let handle = try TurboJPEGHandle.decompressor()
        // A handle that reported an error may keep libjpeg state behind: only clean ones go back.
        var handleIsClean = false
        defer { if handleIsClean { TurboJPEGHandle.recycle(handle) } }

        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let source = base.assumingMemoryBound(to: UInt8.self)
        let headerStatus = tjDecompressHeader3(
            handle.raw, source, UInt(bytes.count), &width, &height, &subsampling, &colorspace)
        if headerStatus != 0 {
            let message = handle.errorMessage
            // Usable anyway: a warning (stray bytes between markers), or TurboJPEG 2.1 failing to
            // name an unusual subsampling, which tjDecompress2 does not need.
            let usable =
                width > 0 && height > 0
                && (tjGetErrorCode(handle.raw) == Int32(TJERR_WARNING.rawValue)
                    || message.contains("Could not determine subsampling"))
            if !usable {
                if message.contains("not supported") || message.contains("Unsupported") {
                    throw ImageError(.unsupportedFormat, "JPEG: \(message)")
                }
                if markers.frameMarker == nil || message.contains("Premature end") {
                    throw ImageError(.truncatedData, "JPEG header: \(message)")
                }
                throw ImageError(.badImageData, "JPEG header: \(message)")
            }
        }
        let orientation = markers.orientation ?? .up
        let full = PixelSize(width: Int(width), height: Int(height))
        let (target, decoded, extent, usesDC) = Self.scaledDecode(markers, full: full, options: options)
        if options.stopsAfterDCScans {
            guard usesDC, markers.isProgressive, colorspace != Int32(TJCS_CMYK.rawValue),
                colorspace != Int32(TJCS_YCCK.rawValue)
            else {
                throw ImageError(
                    .truncatedData,
                    "the JPEG's first scans do not make this image (only a progressive file's ≤ 1/8 thumbnails)")
            }
            try options.limits.check(width: decoded.width, height: decoded.height)
        } else {
            try checkMemory(markers, full: full, decoded: decoded, options: options, dataCount: bytes.count)
            try checkComplete(markers, bytes, options: options)
        }

        let isCMYK = colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
        // Off the cache line: libjpeg-turbo then writes the pixels through the cache
        // (`PixelBuffer.Placement`), where whatever runs next (a resample, the caller) finds them.
        var buffer = try PixelBuffer(width: decoded.width, height: decoded.height, placement: .pastCacheLine)
        let format = isCMYK ? TJPF_CMYK : TJPF_RGBA
        let flags = TJFLAG_LIMITSCANS
        let status: Int32
        // 1/8 scale of a clean baseline or progressive file: DC coefficients only (see
        // ik_jpeg_dc.c), when that is libjpeg's 1/8 output (no chroma subsampling) or is reduced
        // enough afterwards that subsampled chroma's 2x2 IDCT and its DC become the same.
        if !isCMYK, usesDC,
            Self.decodeDC(
                source, bytes.count, into: buffer,
                flags: options.stopsAfterDCScans ? Int32(IK_JPEG_DC_PARTIAL) : 0)
        {
            status = 0
        } else if options.stopsAfterDCScans {
            throw ImageError(.truncatedData, "the JPEG's DC scans are incomplete or damaged")
        } else {
            status = tjDecompress2(
                handle.raw, source, UInt(bytes.count), buffer.row(0), Int32(decoded.width),
                Int32(buffer.bytesPerRow), Int32(decoded.height), Int32(format.rawValue), flags)
        }
        var isPartial = false
        if status != 0 {
            let message = handle.errorMessage
            if tjGetErrorCode(handle.raw) == Int32(TJERR_WARNING.rawValue) {
                // libjpeg only warns when the data ends early: it pads the rest of the scan.
                if message.contains("Premature end") {
                    guard options.allowsPartialImages else {
                        throw ImageError(.truncatedData, "JPEG data ends early: \(message)")
                    }
                    isPartial = true
                }
            } else if message.contains("Unsupported") || message.contains("not supported") {
                throw ImageError(.unsupportedFormat, "JPEG: \(message)")
            } else {
                throw ImageError(.badImageData, "JPEG: \(message)")
            }
        }
        handleIsClean = status == 0 && headerStatus == 0
        let icc = markers.iccProfile(bytes)
        if isCMYK {
            // A CMYK profile converts through Little CMS; without one, the plain formula.
            if let conversion = ColorManagement.cmykConversion(icc) {
                _ = conversion.convertCMYK(
                    buffer.baseAddress, width: buffer.width, height: buffer.height,
                    bytesPerRow: buffer.bytesPerRow, inverted: markers.hasAdobeMarker)
            } else {
                convertCMYKToRGBA(&buffer, inverted: markers.hasAdobeMarker)
            }
        }

        var bitmap = buffer.freeze(isOpaque: true)
        // A DCT-scaled intermediate is already an average of 8×8 (4×4, 2×2) blocks: box-reducing
        // it further before Lanczos costs little quality and a third of the filter work.
        if decoded != target {
            bitmap = try bitmap.resized(to: target, extent: extent, reducingGap: extent == nil ? 2 : 1)
        }
        var image = DecodedImage(
            frames: [ImageFrame(bitmap: bitmap)], format: .jpeg,
            orientation: orientation, isOrientationApplied: false, isPartial: isPartial)
        image.hasGainMap = GainMapDetection.isPresent(in: bytes, markers: markers)
        // After scaling: a thumbnail converts a few thousand pixels, not the whole photo.
        ColorManagement.apply(icc, to: &image, options: options)
        if options.appliesOrientation { image = try image.applyingOrientation() }
        return image
    }

    /// The size a decode of a `full`-sized JPEG delivers under `options` (EXIF orientation from
    /// `markers`), the DCT-scaled size it decodes to first (the smallest that still covers the
    /// target) with that scale's exact extent, and whether the DC decoder can make that 1/8
    /// scale: block DCs stand for libjpeg's 1/8 output exactly when no component is subsampled,
    /// otherwise when the result is reduced at least 1.5x further (≥ 40 dB of TurboJPEG's 1/8
    /// decode + the same resample on the corpus and real photos: `JPEGDCDecoderTests`).
    static func scaledDecode(_ markers: JPEGMarkers, full: PixelSize, options: ImageDecodingOptions)
        -> (target: PixelSize, decoded: PixelSize, extent: (width: Double, height: Double)?, usesDC: Bool)
    {
        let orientation = options.appliesOrientation ? markers.orientation ?? .up : .up
        let target = DecodeTarget.storedSize(for: full, orientation: orientation, frames: 1, options: options)
        let (decoded, extent) = target == full ? (full, nil) : Self.scaledSize(full, covering: target)
        guard decoded != full, decoded.width == (full.width + 7) / 8, decoded.height == (full.height + 7) / 8 else {
            return (target, decoded, extent, false)
        }
        let unsubsampled = markers.sampling.first.map { first in markers.sampling.allSatisfy { $0 == first } } ?? false
        let usesDC = unsubsampled || (2 * decoded.width >= 3 * target.width && 2 * decoded.height >= 3 * target.height)
        return (target, decoded, extent, usesDC)
    }

    /// What a decode allocates, from the headers, before anything is decoded: the output; in
    /// buffered-image mode (progressive, multi-scan) libjpeg's coefficient arrays for the whole
    /// image, whatever the output size; otherwise a few rows — a scaled sequential decode
    /// streams, bounded by ``DecodingLimits/maxStreamedPixels``. Data too short to describe every
    /// block of the declared size is refused as truncated before libjpeg pads it with hours of
    /// grey (unless partial images are wanted).
    private static func checkMemory(
        _ markers: JPEGMarkers, full: PixelSize, decoded: PixelSize, options: ImageDecodingOptions,
        dataCount: Int
    ) throws(ImageError) {
        let limits = options.limits
        try limits.check(width: decoded.width, height: decoded.height)
        let streams = decoded != full && !markers.buffersWholeImage
        if streams {
            try limits.checkStreamed(width: full.width, height: full.height)
        } else if options.scalesDown {
            try limits.checkPixels(width: full.width, height: full.height)
        } else {
            try limits.check(width: full.width, height: full.height)
        }
        try limits.checkWorking(
            markers.coefficientBytes, outputBytes: decoded.width * decoded.height * 4,
            "the JPEG's coefficient buffers (\(full.width)×\(full.height), progressive or multi-scan)")
        guard !options.allowsPartialImages else { return }
        if let minimum = markers.minimumScanBytes, dataCount < minimum {
            throw ImageError(
                .truncatedData,
                "\(dataCount) bytes cannot hold the \(full.width)×\(full.height) JPEG's scans (at least \(minimum) bytes)"
            )
        }
    }

    /// Without partial images, data that ends before its end-of-image marker is refused before
    /// the output buffer and libjpeg's arrays exist (libjpeg would decode all of it, pad the
    /// rest, and only then warn).
    private static func checkComplete(
        _ markers: JPEGMarkers, _ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions
    ) throws(ImageError) {
        guard !options.allowsPartialImages, markers.firstScanOffset != nil, !markers.hasEndMarker(bytes) else { return }
        throw ImageError(.truncatedData, "JPEG data ends before its end-of-image marker")
    }

    /// The 1/8-scale RGBA of a JPEG from the DC-only decoder (`dcOnly`) or from TurboJPEG, for
    /// tests and the benchmark to compare; nil when that decoder does not take the file.
    /// With `partial`, the DC decoder takes a progressive file's data up to its DC scans only.
    static func eighthScale(_ data: Data, dcOnly: Bool, partial: Bool = false) -> Bitmap? {
        data.withUnsafeBytes { bytes -> Bitmap? in
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                let handle = try? TurboJPEGHandle.decompressor()
            else { return nil }
            var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
            guard
                tjDecompressHeader3(handle.raw, base, UInt(bytes.count), &width, &height, &subsampling, &colorspace)
                    == 0,
                let buffer = try? PixelBuffer(
                    width: (Int(width) + 7) / 8, height: (Int(height) + 7) / 8, placement: .pastCacheLine)
            else { return nil }
            let status =
                dcOnly
                ? (Self.decodeDC(base, bytes.count, into: buffer, flags: partial ? Int32(IK_JPEG_DC_PARTIAL) : 0)
                    ? 0 : -1)
                : tjDecompress2(
                    handle.raw, base, UInt(bytes.count), buffer.row(0), Int32(buffer.width), Int32(buffer.bytesPerRow),
                    Int32(buffer.height), Int32(TJPF_RGBA.rawValue), 0)
            return status == 0 ? buffer.freeze(isOpaque: true) : nil
        }
    }

    /// The DC decoder into `buffer` (1/8 of the frame); `flags` as `ik_jpeg_decode_dc_scans`'s
    /// (a progressive file's prefix up to its DC scans).
    static func decodeDC(_ data: UnsafePointer<UInt8>, _ count: Int, into buffer: borrowing PixelBuffer, flags: Int32)
        -> Bool
    {
        var end = 0
        return ik_jpeg_decode_dc_scans(
            data, count, buffer.row(0), buffer.bytesPerRow, Int32(buffer.width), Int32(buffer.height),
            flags, &end) == Int32(IK_JPEG_DC_OK)
    }

    /// Whether `data`, the start of a download, holds what its thumbnail under `options` needs
    /// from the DC scans alone (``ImageLoadOptions/thumbnailFromFirstScans``): a progressive JPEG
    /// whose target is at most 1/8 scale, once those scans have arrived (`pending` before; `never`
    /// for any other file or target).
    static func firstScans(_ data: Data, options: ImageDecodingOptions) -> ImagePrefixVerdict {
        guard options.thumbnailPixelSize != nil else { return .never }
        return data.withUnsafeBytes { bytes -> ImagePrefixVerdict in
            guard bytes.count >= 2, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                return .pending
            }
            guard bytes[0] == 0xFF, bytes[1] == 0xD8 else { return .never }
            let markers = JPEGMarkers(bytes)
            guard markers.firstScanOffset != nil else { return .pending }
            guard markers.isProgressive, !markers.isArithmetic, markers.frameWidth > 0, markers.frameHeight > 0,
                markers.sampling.count != 4,
                Self.scaledDecode(
                    markers, full: PixelSize(width: markers.frameWidth, height: markers.frameHeight), options: options
                ).usesDC
            else { return .never }
            let end = ik_jpeg_dc_scans_end(base, bytes.count)
            return end > 0 ? .ready(byteCount: end) : .pending
        }
    }

    /// A progressive JPEG's first preview from its first DC scans alone (the AC scans after
    /// them need not have arrived): the 1/8-scale DC picture resized to the size the decode
    /// would have (at most 1/4 of the image), marked partial; a fraction of what decoding the
    /// scans received costs (libjpeg runs its IDCT over blocks that have only their DC). nil
    /// when the DC scans are not all here yet, or the file is not one the DC decoder takes.
    static func firstScansPreview(_ data: Data, options: ImageDecodingOptions) -> DecodedImage? {
        data.withUnsafeBytes { bytes -> DecodedImage? in
            guard bytes.count > 4, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            let markers = JPEGMarkers(bytes)
            guard markers.isProgressive, !markers.isArithmetic, markers.frameWidth >= 16, markers.frameHeight >= 16,
                markers.sampling.count != 4
            else { return nil }
            let full = PixelSize(width: markers.frameWidth, height: markers.frameHeight)
            let target = Self.scaledDecode(markers, full: full, options: options).target
            let eighth = PixelSize(width: (full.width + 7) / 8, height: (full.height + 7) / 8)
            // Up to 1/4 scale; beyond, upscaling the DC picture costs more than libjpeg's decode
            // of the scans so far (bench: full-size 16-chunk previews 2.7-3.5x one-shot with it,
            // 2.1-2.3x without).
            guard 4 * target.width <= full.width + 3, 4 * target.height <= full.height + 3,
                (try? options.limits.check(width: target.width, height: target.height)) != nil,
                let buffer = try? PixelBuffer(width: eighth.width, height: eighth.height),
                Self.decodeDC(base, bytes.count, into: buffer, flags: Int32(IK_JPEG_DC_FIRST_SCANS))
            else { return nil }
            var bitmap = buffer.freeze(isOpaque: true)
            if target != eighth {
                guard
                    let resized = try? bitmap.resized(
                        to: target, extent: (Double(full.width) / 8, Double(full.height) / 8),
                        reducingGap: 1)
                else { return nil }
                bitmap = resized
            }
            var image = DecodedImage(
                frames: [ImageFrame(bitmap: bitmap)], format: .jpeg, orientation: markers.orientation ?? .up,
                isOrientationApplied: false, isPartial: true)
            if options.appliesOrientation { image = (try? image.applyingOrientation()) ?? image }
            return image
        }
    }

    /// The TurboJPEG scaling factors (1/8 … 2), read once.
    static let scalingFactors: [(num: Int, denom: Int)] = {
        var count: Int32 = 0
        guard let factors = tjGetScalingFactors(&count) else { return [(1, 1)] }
        return (0..<Int(count)).map { (Int(factors[$0].num), Int(factors[$0].denom)) }
    }()

    /// The smallest DCT-scaled size (TJSCALED: ceil(size × num / denom)) that is at least
    /// `target` on both sides; the full size when no factor below 1 covers it.
    /// Also returns the picture's exact (fractional) extent at that scale.
    static func scaledSize(_ full: PixelSize, covering target: PixelSize) -> (
        PixelSize, (width: Double, height: Double)?
    ) {
        var best = full
        var extent: (width: Double, height: Double)?
        for (num, denom) in scalingFactors where num < denom {
            let scaled = PixelSize(
                width: (full.width * num + denom - 1) / denom, height: (full.height * num + denom - 1) / denom)
            if scaled.width >= target.width && scaled.height >= target.height && scaled.pixelCount < best.pixelCount {
                best = scaled
                extent = (Double(full.width * num) / Double(denom), Double(full.height * num) / Double(denom))
            }
        }
        return (best, extent)
    }

    /// CMYK (as stored) to RGB in place. Adobe writes inverted CMYK, where a stored 255 means no
    /// ink; without the Adobe marker the values are plain ink amounts.
    private static func convertCMYKToRGBA(_ buffer: inout PixelBuffer, inverted: Bool) {
        for y in 0..<buffer.height {
            let row = buffer.row(y)
            for x in 0..<buffer.width {
                let p = row + x * 4
                var c = UInt32(p[0]), m = UInt32(p[1]), yellow = UInt32(p[2]), k = UInt32(p[3])
                if !inverted { c = 255 - c; m = 255 - m; yellow = 255 - yellow; k = 255 - k }
                p[0] = UInt8((c * k + 127) / 255)
                p[1] = UInt8((m * k + 127) / 255)
                p[2] = UInt8((yellow * k + 127) / 255)
                p[3] = 255
            }
        }
    }

    /// Writes JPEG (4:2:0, baseline or progressive) at the options' quality.
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard format == .jpeg else { throw ImageError(.encodingFailed, "JPEGCoder cannot encode \(format)") }
        guard let frame = image.frames.first else { throw ImageError(.zeroPixels, "the image has no frames") }
        let bitmap = frame.bitmap
        let compressor = try TurboJPEGCompressor.checkOut()
        let quality = Int32((min(max(options.quality, 0), 1) * 100).rounded())
        let data = try bitmap.withUnsafeBytes { pixels throws(ImageError) in
            try compressor.compress(
                pixels.baseAddress!.assumingMemoryBound(to: UInt8.self), width: bitmap.width,
                bytesPerRow: bitmap.bytesPerRow, height: bitmap.height, quality: max(quality, 1),
                flags: options.progressive ? TJFLAG_PROGRESSIVE : 0)
        }
        // Only after a clean encode: a failed one leaves the handle's error state behind it.
        TurboJPEGCompressor.recycle(compressor)
        return image.colorProfile.map { ColorProfileEmbedding.jpeg(data, $0) } ?? data
    }
}

extension JPEGCoder: EarlyFinishImageDecoding {
    /// A progressive JPEG thumbnailed at 1/8 scale or less needs only its DC scans (`firstScans(_:options:)`).
    public func prefixVerdict(_ data: Data, options: ImageDecodingOptions) -> ImagePrefixVerdict {
        Self.firstScans(data, options: options)
    }
}
