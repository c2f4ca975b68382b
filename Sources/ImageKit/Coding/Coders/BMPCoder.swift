import Foundation

/// BMP decoding, in Swift: every bit depth (1, 2, 4, 8 with a palette; 16, 24, 32), RLE8 and
/// RLE4, bit fields (with an alpha mask in V3–V5 headers), top-down and bottom-up rows, OS/2 1.x
/// headers. Decode only.
///
/// Uncompressed files are read row by row straight into the output, or into the resampler for
/// a thumbnail, so a scaled decode never holds the whole image. RLE files are expanded whole
/// (their rows cannot be found without decoding the ones before), within
/// ``DecodingLimits/maxWorkingBytes``. A 32-bit file without an alpha mask is opaque (the fourth
/// byte is padding, as Windows and Pillow read it). Pixels a run-length file skips are palette
/// entry 0. An embedded V5 profile is not applied (see the README).
public struct BMPCoder: ImageCoding {
    /// The BMP decoder.
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .bmp }
    public func canEncode(_ format: ImageFormat) -> Bool { false }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in
            guard bytes.count >= 14, bytes[0] == 0x42, bytes[1] == 0x4D else {
                throw ImageError(.badImageData, "BMP: no BM file header")
            }
            let pixelOffset = Int(BMPReader.u32(bytes, 10))
            let dib = try BMPReader(bytes, headerOffset: 14, pixelOffset: pixelOffset, isIconImage: false)
            let bitmap = try dib.decode(options: options)
            return DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .bmp)
        }
    }

    /// Throws `encodingFailed`: ImageKit does not write BMP.
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        throw ImageError(.encodingFailed, "ImageKit does not write BMP")
    }
}

/// A parsed DIB (the BMP header after the file header, or an ICO entry's image).
struct BMPReader {
    let bytes: UnsafeRawBufferPointer
    let width: Int
    let height: Int
    let topDown: Bool
    let bitCount: Int
    let compression: UInt32
    /// Bit masks of red, green, blue and alpha (alpha 0: opaque) for 16 and 32 bits.
    let masks: (r: UInt32, g: UInt32, b: UInt32, a: UInt32)
    /// Palette entries as RGBA.
    let palette: [UInt32]
    let pixelOffset: Int
    /// An ICO image: `height` is half the stored one, and a 1-bit AND mask follows the colours.
    let isIconImage: Bool

    static let rgb: UInt32 = 0, rle8: UInt32 = 1, rle4: UInt32 = 2, bitfields: UInt32 = 3, alphaBitfields: UInt32 = 6

    static func u16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    static func u32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(
            bytes[offset + 3]) << 24
    }

    /// Parses the DIB header at `headerOffset`; the pixels are at `pixelOffset` (nil: right after
    /// the palette, as in an ICO).
    init(_ bytes: UnsafeRawBufferPointer, headerOffset: Int, pixelOffset: Int?, isIconImage: Bool) throws(ImageError) {
        self.bytes = bytes
        self.isIconImage = isIconImage
        guard headerOffset + 16 <= bytes.count else { throw ImageError(.truncatedData, "BMP: the header is cut short") }
        let headerSize = Int(Self.u32(bytes, headerOffset))
        guard [12, 16, 40, 52, 56, 64, 108, 124].contains(headerSize) else {
            throw ImageError(.badImageData, "BMP: unknown header size \(headerSize)")
        }
        guard headerOffset + headerSize <= bytes.count else {
            throw ImageError(.truncatedData, "BMP: the header is cut short")
        }
        var storedHeight: Int
        var compression: UInt32 = Self.rgb
        var colorsUsed = 0
        var masks: (r: UInt32, g: UInt32, b: UInt32, a: UInt32) = (0, 0, 0, 0)
        var paletteOffset = headerOffset + headerSize
        let paletteEntrySize: Int
        if headerSize == 12 {
            width = Int(Self.u16(bytes, headerOffset + 4))
            storedHeight = Int(Int16(bitPattern: Self.u16(bytes, headerOffset + 6)))
            bitCount = Int(Self.u16(bytes, headerOffset + 10))
            paletteEntrySize = 3
        } else {
            width = Int(Int32(bitPattern: Self.u32(bytes, headerOffset + 4)))
            storedHeight = Int(Int32(bitPattern: Self.u32(bytes, headerOffset + 8)))
            bitCount = Int(Self.u16(bytes, headerOffset + 14))
            if headerSize >= 20 { compression = Self.u32(bytes, headerOffset + 16) }
            if headerSize >= 36 { colorsUsed = Int(Self.u32(bytes, headerOffset + 32)) }
            paletteEntrySize = 4
            if headerSize == 64 && compression == 3 && bitCount == 1 {
                throw ImageError(.unsupportedFormat, "BMP: OS/2 Huffman 1D compression is not supported")
            }
            if compression == Self.bitfields || compression == Self.alphaBitfields {
                // Masks inside V2+ headers, after a 40-byte INFO header otherwise.
                let maskOffset = headerOffset + 40
                let maskCount = headerSize >= 56 || compression == Self.alphaBitfields ? 4 : 3
                guard maskOffset + maskCount * 4 <= bytes.count else {
                    throw ImageError(.truncatedData, "BMP: the bit masks are cut short")
                }
                masks = (
                    Self.u32(bytes, maskOffset), Self.u32(bytes, maskOffset + 4), Self.u32(bytes, maskOffset + 8),
                    maskCount == 4 ? Self.u32(bytes, maskOffset + 12) : 0
                )
                if headerSize == 40 { paletteOffset += maskCount * 4 }
            } else if headerSize >= 56 && (bitCount == 16 || bitCount == 32) {
                // V3+ headers may carry an alpha mask for BI_RGB data; Windows ignores it: opaque.
                masks = (0, 0, 0, 0)
            }
        }
        if isIconImage { storedHeight /= 2 }
        topDown = storedHeight < 0
        height = storedHeight.magnitude > Int(Int32.max) ? 0 : abs(storedHeight)
        self.compression = compression
        guard width > 0, height > 0 else { throw ImageError(.zeroPixels, "BMP declares \(width)×\(height) pixels") }
        switch (compression, bitCount) {
        case (Self.rgb, 1), (Self.rgb, 2), (Self.rgb, 4), (Self.rgb, 8), (Self.rgb, 16), (Self.rgb, 24), (Self.rgb, 32),
            (Self.rle8, 8), (Self.rle4, 4), (Self.bitfields, 16), (Self.bitfields, 32),
            (Self.alphaBitfields, 16), (Self.alphaBitfields, 32):
            break
        case (4, _), (5, _):
            throw ImageError(
                .unsupportedFormat, "BMP with embedded \(compression == 4 ? "JPEG" : "PNG") data is not supported")
        default:
            throw ImageError(
                .badImageData,
                "BMP: \(bitCount) bits per pixel with compression \(compression) is not a valid combination")
        }
        if compression == Self.rgb && bitCount == 16 { masks = (0x7C00, 0x03E0, 0x001F, 0) }
        if compression == Self.rgb && (bitCount == 24 || bitCount == 32) { masks = (0xFF0000, 0xFF00, 0xFF, 0) }
        if bitCount == 16 || bitCount == 32 {
            guard masks.r != 0 || masks.g != 0 || masks.b != 0 else {
                throw ImageError(.badImageData, "BMP: empty bit masks")
            }
        }
        self.masks = masks

        var palette: [UInt32] = []
        if bitCount <= 8 {
            let maximum = 1 << bitCount
            let count = colorsUsed > 0 && colorsUsed <= maximum ? colorsUsed : maximum
            let available = max(0, (min(bytes.count, pixelOffset ?? bytes.count) - paletteOffset) / paletteEntrySize)
            let entries = min(count, available)
            guard entries > 0 else { throw ImageError(.truncatedData, "BMP: the palette is missing") }
            palette.reserveCapacity(maximum)
            for index in 0..<entries {
                let o = paletteOffset + index * paletteEntrySize
                palette.append(UInt32(bytes[o + 2]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o]) << 16 | 0xFF00_0000)
            }
            // Indices past the palette read as black, as Windows shows them.
            while palette.count < maximum { palette.append(0xFF00_0000) }
            paletteOffset += count * paletteEntrySize
        }
        self.palette = palette
        let start = pixelOffset ?? paletteOffset
        guard start >= 0, start < bytes.count else {
            throw ImageError(.truncatedData, "BMP: the pixel data is missing")
        }
        self.pixelOffset = start
    }

    /// Bytes of one stored row (padded to 4 bytes).
    var rowStride: Int { ((width * bitCount + 31) / 32) * 4 }

    /// Whether the decoded pixels may have alpha below 255.
    var hasAlpha: Bool { masks.a != 0 || isIconImage }

    func decode(options: ImageDecodingOptions) throws(ImageError) -> Bitmap {
        let full = PixelSize(width: width, height: height)
        let target = DecodeTarget.size(for: full, options: options)
        if target == full {
            try options.limits.check(width: width, height: height)
        } else {
            try options.limits.checkPixels(width: width, height: height)
            try options.limits.check(width: target.width, height: target.height)
        }
        let isRLE = compression == Self.rle8 || compression == Self.rle4
        if isRLE || isIconImage {
            // Whole: RLE rows only follow from the ones before; an icon's mask comes after all rows.
            if target != full {
                try options.limits.checkWorking(
                    full.pixelCount * 4, outputBytes: target.pixelCount * 4, "a \(full) run-length BMP")
            }
            var buffer = try PixelBuffer(width: width, height: height)
            if isRLE {
                try expandRLE(into: &buffer)
            } else {
                try readRows { y, row in
                    buffer.row(y).update(from: row, count: width * 4)
                }
            }
            if isIconImage { applyIconMask(&buffer) }
            let bitmap = buffer.freeze(isOpaque: !hasAlpha)
            return target == full ? bitmap : try bitmap.resized(to: target)
        }
        // Rows go straight to the output, or through the resampler in top-to-bottom order.
        if target == full {
            let buffer = try PixelBuffer(width: width, height: height)
            try readRows { y, row in buffer.row(y).update(from: row, count: width * 4) }
            return buffer.freeze(isOpaque: !hasAlpha)
        }
        try options.limits.checkStreamed(width: width, height: height)
        let resampler = try Resampler(source: full, target: target, isOpaque: !hasAlpha)
        try readRows { _, row in resampler.push(row: UnsafePointer(row)) }
        return resampler.finish()
    }

    /// Calls `body` with each decoded row (RGBA), top row first, for uncompressed data.
    private func readRows(_ body: (Int, UnsafeMutablePointer<UInt8>) -> Void) throws(ImageError) {
        let (needed, overflow) = rowStride.multipliedReportingOverflow(by: height)
        guard !overflow, needed <= bytes.count - pixelOffset else {
            throw ImageError(
                .truncatedData,
                "BMP: the pixel data ends early (\(bytes.count - pixelOffset) bytes for \(height) rows of \(rowStride))"
            )
        }
        let row = UnsafeMutablePointer<UInt8>.allocate(capacity: width * 4)
        defer { row.deallocate() }
        let channels = MaskChannels(masks)
        for y in 0..<height {
            let stored = topDown ? y : height - 1 - y
            let source = pixelOffset + stored * rowStride
            unpack(UnsafeRawBufferPointer(rebasing: bytes[source..<source + rowStride]), into: row, channels: channels)
            body(y, row)
        }
    }

    private func unpack(_ source: UnsafeRawBufferPointer, into row: UnsafeMutablePointer<UInt8>, channels: MaskChannels)
    {
        let out = UnsafeMutableRawPointer(row)
        switch bitCount {
        case 1, 2, 4, 8:
            let perByte = 8 / bitCount, mask = (1 << bitCount) - 1
            for x in 0..<width {
                let byte = Int(source[x / perByte])
                let shift = 8 - bitCount * (x % perByte + 1)
                out.storeBytes(of: palette[(byte >> shift) & mask].littleEndian, toByteOffset: x * 4, as: UInt32.self)
            }
        case 24:
            for x in 0..<width {
                row[x * 4] = source[x * 3 + 2]
                row[x * 4 + 1] = source[x * 3 + 1]
                row[x * 4 + 2] = source[x * 3]
                row[x * 4 + 3] = 255
            }
        case 16:
            for x in 0..<width {
                channels.store(UInt32(source[x * 2]) | UInt32(source[x * 2 + 1]) << 8, to: row + x * 4)
            }
        default:  // 32
            for x in 0..<width {
                let o = x * 4
                let value =
                    UInt32(source[o]) | UInt32(source[o + 1]) << 8 | UInt32(source[o + 2]) << 16 | UInt32(source[o + 3])
                    << 24
                channels.store(value, to: row + o)
            }
        }
    }

    /// Expands RLE8/RLE4 data into `buffer` (rows stored bottom-up unless top-down). Codes that
    /// run past a row or the image stop there; skipped pixels keep palette entry 0.
    private func expandRLE(into buffer: inout PixelBuffer) throws(ImageError) {
        let background = palette[0].littleEndian
        for y in 0..<height {
            let row = UnsafeMutableRawPointer(buffer.row(y))
            for x in 0..<width { row.storeBytes(of: background, toByteOffset: x * 4, as: UInt32.self) }
        }
        let isRLE4 = compression == Self.rle4
        var offset = pixelOffset, x = 0, line = 0
        func put(_ index: Int) {
            guard x < width, line < height else { return }
            let y = topDown ? line : height - 1 - line
            UnsafeMutableRawPointer(buffer.row(y)).storeBytes(
                of: palette[index].littleEndian, toByteOffset: x * 4, as: UInt32.self)
            x += 1
        }
        while line < height {
            guard offset + 2 <= bytes.count else {
                throw ImageError(.truncatedData, "BMP: the run-length data ends early")
            }
            let count = Int(bytes[offset]), value = Int(bytes[offset + 1])
            offset += 2
            if count > 0 {
                for i in 0..<count { put(isRLE4 ? (i % 2 == 0 ? value >> 4 : value & 0x0F) : value) }
                continue
            }
            switch value {
            case 0: line += 1; x = 0  // end of line
            case 1: return  // end of bitmap
            case 2:
                guard offset + 2 <= bytes.count else {
                    throw ImageError(.truncatedData, "BMP: the run-length data ends early")
                }
                x += Int(bytes[offset]); line += Int(bytes[offset + 1])
                offset += 2
            default:  // absolute run of `value` pixels, padded to 2 bytes
                let byteCount = isRLE4 ? (value + 1) / 2 : value
                guard offset + byteCount <= bytes.count else {
                    throw ImageError(.truncatedData, "BMP: the run-length data ends early")
                }
                for i in 0..<value {
                    let byte = Int(bytes[offset + (isRLE4 ? i / 2 : i)])
                    put(isRLE4 ? (i % 2 == 0 ? byte >> 4 : byte & 0x0F) : byte)
                }
                offset += (byteCount + 1) & ~1
            }
        }
    }

    /// An icon's AND mask (1 = transparent) after the colour rows, unless the colours carry
    /// alpha themselves (32-bit icons), as Windows draws them.
    private func applyIconMask(_ buffer: inout PixelBuffer) {
        if bitCount == 32 {
            // 32-bit icon colours carry alpha in the fourth byte (the mask is for old systems).
            let colorOffset = pixelOffset
            for y in 0..<height {
                let stored = topDown ? y : height - 1 - y
                let row = buffer.row(y)
                for x in 0..<width { row[x * 4 + 3] = bytes[colorOffset + stored * rowStride + x * 4 + 3] }
            }
            return
        }
        let maskStride = ((width + 31) / 32) * 4
        let maskOffset = pixelOffset + rowStride * height
        guard maskOffset + maskStride * height <= bytes.count else { return }  // no mask: opaque
        for y in 0..<height {
            let stored = topDown ? y : height - 1 - y
            let row = buffer.row(y)
            for x in 0..<width where bytes[maskOffset + stored * maskStride + x / 8] & (0x80 >> UInt8(x % 8)) != 0 {
                row[x * 4 + 3] = 0
            }
        }
    }
}

/// Extraction of bit-field channels, each scaled to 8 bits.
private struct MaskChannels {
    struct Channel {
        var shift: UInt32 = 0, maximum: UInt32 = 0
        init(_ mask: UInt32) {
            guard mask != 0 else { return }
            shift = UInt32(mask.trailingZeroBitCount)
            maximum = mask >> shift
        }
        @inline(__always) func value(_ pixel: UInt32, default fallback: UInt8) -> UInt8 {
            guard maximum != 0 else { return fallback }
            let v = (pixel >> shift) & maximum
            // Truncating, as Windows and Pillow scale 5- and 6-bit fields.
            return maximum == 255 ? UInt8(v) : UInt8(UInt64(v) * 255 / UInt64(maximum))
        }
    }
    var r, g, b, a: Channel
    init(_ masks: (r: UInt32, g: UInt32, b: UInt32, a: UInt32)) {
        r = Channel(masks.r); g = Channel(masks.g); b = Channel(masks.b); a = Channel(masks.a)
    }
    @inline(__always) func store(_ pixel: UInt32, to p: UnsafeMutablePointer<UInt8>) {
        p[0] = r.value(pixel, default: 0)
        p[1] = g.value(pixel, default: 0)
        p[2] = b.value(pixel, default: 0)
        p[3] = a.value(pixel, default: 255)
    }
}
