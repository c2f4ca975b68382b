internal import CImageCodecs
internal import CTIFF
import Foundation

/// A libtiff handle reading from memory, with libtiff's messages collected instead of printed.
final class TIFFFile {
    let handle: OpaquePointer
    private let source: MemorySource

    final class MemorySource {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        var lastError: String?
        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    }

    private init(handle: OpaquePointer, source: MemorySource) {
        self.handle = handle
        self.source = source
    }

    static func open<Result>(_ bytes: UnsafeRawBufferPointer, _ body: (TIFFFile) throws(ImageError) -> Result)
        throws(ImageError) -> Result
    {
        guard bytes.count >= 8 else { throw ImageError(.truncatedData, "TIFF: the header is cut short") }
        let source = MemorySource(bytes)
        let context = Unmanaged.passUnretained(source).toOpaque()
        let openOptions = TIFFOpenOptionsAlloc()
        defer { TIFFOpenOptionsFree(openOptions) }
        TIFFOpenOptionsSetErrorHandlerExtR(
            openOptions,
            { _, user, module, format, arguments in
                guard let user, let format, let arguments else { return 1 }
                var message = [CChar](repeating: 0, count: 512)
                _ = vsnprintf(&message, message.count, format, arguments)
                let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let source = Unmanaged<MemorySource>.fromOpaque(user).takeUnretainedValue()
                if source.lastError == nil {
                    source.lastError = module.map { String(cString: $0) + ": " + text } ?? text
                }
                return 1
            }, context)
        TIFFOpenOptionsSetWarningHandlerExtR(openOptions, { _, _, _, _, _ in 1 }, nil)
        // One allocation libtiff makes for a strip or tile may not exceed the working limit.
        TIFFOpenOptionsSetMaxSingleMemAlloc(openOptions, 256 << 20)
        guard
            let handle = TIFFClientOpenExt(
                "memory", "rm", context,
                { context, buffer, size in
                    let source = Unmanaged<MemorySource>.fromOpaque(context!).takeUnretainedValue()
                    let count = max(0, min(Int(size), source.bytes.count - source.position))
                    if count > 0, let buffer {
                        buffer.copyMemory(from: source.bytes.baseAddress! + source.position, byteCount: count)
                    }
                    source.position += count
                    return tmsize_t(count)
                }, { _, _, _ in 0 },
                { context, offset, whence in
                    let source = Unmanaged<MemorySource>.fromOpaque(context!).takeUnretainedValue()
                    let base: Int
                    switch whence {
                    case SEEK_CUR: base = source.position
                    case SEEK_END: base = source.bytes.count
                    default: base = 0
                    }
                    let (position, overflow) = base.addingReportingOverflow(
                        Int(truncatingIfNeeded: Int64(bitPattern: offset)))
                    guard !overflow, position >= 0 else { return UInt64.max }
                    source.position = position
                    return UInt64(position)
                }, { _ in 0 },
                { context in
                    UInt64(Unmanaged<MemorySource>.fromOpaque(context!).takeUnretainedValue().bytes.count)
                }, { _, _, _ in 0 }, { _, _, _ in }, openOptions)
        else {
            let message = source.lastError ?? "not a readable TIFF"
            throw ImageError(
                message.contains("Cannot read") || message.contains("EOF") ? .truncatedData : .badImageData,
                "TIFF: \(message)")
        }
        let file = TIFFFile(handle: handle, source: source)
        defer { TIFFClose(handle) }
        return try body(file)
    }

    /// An integer tag; with `defaulted`, libtiff's default when the file has none.
    /// Makes page `index` the current directory.
    func select(page index: Int, of count: Int) throws(ImageError) {
        guard index >= 0, index < count else {
            throw ImageError(.invalidArgument, "page \(index) of a TIFF of \(count) page(s)")
        }
        guard TIFFSetDirectory(handle, UInt32(index)) == 1 else { throw failure("reading page \(index)") }
    }

    func field<Value: FixedWidthInteger>(_ tag: UInt32, _ type: Value.Type, defaulted: Bool = false) -> Value? {
        var value: Value = 0
        let found = withUnsafeMutablePointer(to: &value) { pointer in
            withVaList([pointer]) {
                defaulted ? TIFFVGetFieldDefaulted(handle, tag, $0) : TIFFVGetField(handle, tag, $0)
            }
        }
        return found == 1 ? value : nil
    }

    func iccProfile() -> Data? {
        var count: UInt32 = 0
        var pointer: UnsafeMutableRawPointer?
        let found = withUnsafeMutablePointer(to: &count) { countPointer in
            withUnsafeMutablePointer(to: &pointer) { dataPointer in
                withVaList([countPointer, dataPointer]) { TIFFVGetField(handle, UInt32(TIFFTAG_ICCPROFILE), $0) }
            }
        }
        guard found == 1, let pointer, count > 0 else { return nil }
        return Data(bytes: pointer, count: Int(count))
    }

    /// The extra samples' kinds (EXTRASAMPLE_*).
    func extraSamples() -> [UInt16] {
        var count: UInt16 = 0
        var pointer: UnsafeMutablePointer<UInt16>?
        let found = withUnsafeMutablePointer(to: &count) { countPointer in
            withUnsafeMutablePointer(to: &pointer) { valuesPointer in
                withVaList([countPointer, valuesPointer]) { TIFFVGetField(handle, UInt32(TIFFTAG_EXTRASAMPLES), $0) }
            }
        }
        guard found == 1, let pointer else { return [] }
        return Array(UnsafeBufferPointer(start: pointer, count: Int(count)))
    }

    private func failure(_ what: String) -> ImageError {
        let message = source.lastError ?? "\(what) failed"
        let truncated = message.contains("Read error") || message.contains("EOF") || message.contains("Cannot read")
        return ImageError(truncated ? .truncatedData : .badImageData, "TIFF: \(message)")
    }

    /// Fills `buffer` with the first page's RGBA, rows as stored (the Orientation tag not
    /// applied). Returns whether the pixels are known opaque.
    func readPixels(into buffer: inout PixelBuffer, icc: Data?) throws(ImageError) -> Bool {
        let photometric = field(UInt32(TIFFTAG_PHOTOMETRIC), UInt16.self, defaulted: true) ?? 0
        let bits = field(UInt32(TIFFTAG_BITSPERSAMPLE), UInt16.self, defaulted: true) ?? 1
        let samples = Int(field(UInt32(TIFFTAG_SAMPLESPERPIXEL), UInt16.self, defaulted: true) ?? 1)
        let planar = field(UInt32(TIFFTAG_PLANARCONFIG), UInt16.self, defaulted: true) ?? 1
        let sampleFormat = field(UInt32(TIFFTAG_SAMPLEFORMAT), UInt16.self, defaulted: true) ?? 1
        let extras = extraSamples()
        let alpha = extras.first ?? UInt16(EXTRASAMPLE_UNSPECIFIED)
        let direct = bits == 8 && planar == UInt16(PLANARCONFIG_CONTIG) && TIFFIsTiled(handle) == 0 && sampleFormat == 1
        let colorSamples: Int
        switch Int32(photometric) {
        case PHOTOMETRIC_RGB: colorSamples = 3
        case PHOTOMETRIC_MINISBLACK: colorSamples = 1
        case PHOTOMETRIC_SEPARATED: colorSamples = 4
        default: colorSamples = 0
        }
        let hasStraightAlpha = samples == colorSamples + 1 && alpha == UInt16(EXTRASAMPLE_UNASSALPHA)
        let hasAnyAlpha =
            samples > colorSamples && colorSamples > 0
            && (alpha == UInt16(EXTRASAMPLE_UNASSALPHA) || alpha == UInt16(EXTRASAMPLE_ASSOCALPHA))
        let inkSet = field(UInt32(TIFFTAG_INKSET), UInt16.self, defaulted: true) ?? UInt16(INKSET_CMYK)
        if direct, colorSamples == 4, samples == 4, inkSet == UInt16(INKSET_CMYK),
            let conversion = ColorManagement.cmykConversion(icc)
        {
            try readScanlines(into: &buffer) { source, row, width in
                row.update(from: source, count: width * 4)
            }
            _ = conversion.convertCMYK(
                buffer.baseAddress, width: buffer.width, height: buffer.height,
                bytesPerRow: buffer.bytesPerRow, inverted: false)
            return true
        }
        if direct, (colorSamples == 3 || colorSamples == 1), samples == colorSamples || hasStraightAlpha {
            try readScanlines(into: &buffer) { source, row, width in
                ik_expand_to_rgba(source, row, Int32(width), Int32(samples))
            }
            return samples == colorSamples
        }
        if (9...16).contains(bits), planar == UInt16(PLANARCONFIG_CONTIG), TIFFIsTiled(handle) == 0, sampleFormat == 1,
            colorSamples == 3 || colorSamples == 1, samples == colorSamples + 1,
            alpha == UInt16(EXTRASAMPLE_ASSOCALPHA)
        {
            // Premultiplied samples deeper than 8 bits are made straight at their own depth, then
            // scaled: libtiff's RGBA reader drops them to 8 bits first, after which a faint
            // pixel's colour cannot be recovered (alpha 1 of 255 leaves 8 levels of colour).
            try readScanlines(into: &buffer) { source, row, width in
                Self.expandAssociated(source, bits: Int(bits), samples: samples, width: width, into: row)
            }
            return false
        }
        if (9...15).contains(bits), planar == UInt16(PLANARCONFIG_CONTIG), TIFFIsTiled(handle) == 0, sampleFormat == 1,
            colorSamples == 3 || colorSamples == 1, samples == colorSamples || hasStraightAlpha
        {
            // libtiff's RGBA reader takes 1, 2, 4, 8 and 16 bits only ("can not handle images
            // with 12-bit samples"): the packed samples are read and scaled here, as the RGBA
            // reader scales 16-bit ones.
            try readScanlines(into: &buffer) { source, row, width in
                Self.expandPacked(source, bits: Int(bits), samples: samples, width: width, into: row)
            }
            return samples == colorSamples
        }
        try readRGBA(into: &buffer)
        if hasAnyAlpha || (colorSamples == 0 && samples > 1 && !extras.isEmpty) {
            for y in 0..<buffer.height { ik_unpremultiply_row(buffer.row(y), Int32(buffer.width)) }
            return false
        }
        return true
    }

    /// Reads strip after strip (the whole strip in one libtiff call) and hands each row to
    /// `convert`.
    private func readScanlines(
        into buffer: inout PixelBuffer,
        _ convert: (UnsafePointer<UInt8>, UnsafeMutablePointer<UInt8>, Int) -> Void
    ) throws(ImageError) {
        let lineSize = Int(TIFFScanlineSize(handle)), stripSize = Int(TIFFStripSize(handle))
        let rowsPerStrip = max(
            1, min(Int(field(UInt32(TIFFTAG_ROWSPERSTRIP), UInt32.self, defaulted: true) ?? 1), buffer.height))
        guard lineSize > 0, stripSize >= lineSize else { throw failure("strip size") }
        let strip = UnsafeMutablePointer<UInt8>.allocate(capacity: stripSize)
        defer { strip.deallocate() }
        var y = 0
        while y < buffer.height {
            let index = TIFFComputeStrip(handle, UInt32(y), 0)
            let read = Int(TIFFReadEncodedStrip(handle, index, strip, tmsize_t(stripSize)))
            let rows = min(rowsPerStrip, buffer.height - y)
            guard read >= rows * lineSize else { throw failure("reading strip \(index)") }
            for row in 0..<rows { convert(strip + row * lineSize, buffer.row(y + row), buffer.width) }
            y += rows
        }
    }

    /// A row of premultiplied pixels (colour samples, then associated alpha) of `bits` bits as
    /// straight RGBA8: each colour divided by alpha at full depth, rounded, then every sample
    /// scaled to 0…255. 16-bit samples are whole words in the machine's order (libtiff swaps
    /// them); 9–15-bit ones packed most significant bit first.
    static func expandAssociated(
        _ source: UnsafePointer<UInt8>, bits: Int, samples: Int, width: Int, into row: UnsafeMutablePointer<UInt8>
    ) {
        let maximum = (1 << bits) - 1
        var bitPosition = 0
        func next() -> Int {
            if bits == 16 {
                defer { bitPosition += 16 }
                return Int(UnsafeRawPointer(source + bitPosition / 8).loadUnaligned(as: UInt16.self))
            }
            var value = 0
            for _ in 0..<bits {
                let byte = Int(source[bitPosition >> 3])
                value = value << 1 | (byte >> (7 - bitPosition & 7)) & 1
                bitPosition += 1
            }
            return value
        }
        func eight(_ value: Int) -> UInt8 { UInt8((value * 255 + maximum / 2) / maximum) }
        let colours = samples - 1
        for x in 0..<width {
            let first = next()
            let second = colours == 3 ? next() : first
            let third = colours == 3 ? next() : first
            let alpha = next()
            let pixel = row + x * 4
            if alpha == 0 {
                pixel[0] = 0; pixel[1] = 0; pixel[2] = 0; pixel[3] = 0
                continue
            }
            func straight(_ value: Int) -> UInt8 { eight(min(maximum, (value * maximum + alpha / 2) / alpha)) }
            pixel[0] = straight(first)
            pixel[1] = straight(second)
            pixel[2] = straight(third)
            pixel[3] = eight(alpha)
        }
    }

    /// A row of `width` pixels of `samples` unsigned samples of `bits` bits each, packed most
    /// significant bit first (TIFF's order), as RGBA8: each sample scaled to 0…255 (rounded), gray
    /// repeated, alpha 255 when there is none.
    static func expandPacked(
        _ source: UnsafePointer<UInt8>, bits: Int, samples: Int, width: Int, into row: UnsafeMutablePointer<UInt8>
    ) {
        let maximum = (1 << bits) - 1
        var bitPosition = 0
        func next() -> UInt8 {
            var value = 0
            for _ in 0..<bits {
                let byte = Int(source[bitPosition >> 3])
                value = value << 1 | (byte >> (7 - bitPosition & 7)) & 1
                bitPosition += 1
            }
            return UInt8((value * 255 + maximum / 2) / maximum)
        }
        for x in 0..<width {
            let pixel = row + x * 4
            if samples >= 3 {
                pixel[0] = next(); pixel[1] = next(); pixel[2] = next()
            } else {
                let gray = next()
                pixel[0] = gray; pixel[1] = gray; pixel[2] = gray
            }
            pixel[3] = samples == 2 || samples == 4 ? next() : 255
        }
    }

    private func readRGBA(into buffer: inout PixelBuffer) throws(ImageError) {
        var message = [CChar](repeating: 0, count: 1024)
        guard TIFFRGBAImageOK(handle, &message) == 1 else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw ImageError(.unsupportedFormat, "TIFF: \(text)")
        }
        var image = TIFFRGBAImage()
        guard TIFFRGBAImageBegin(&image, handle, 0, &message) == 1 else { throw failure("starting the RGBA reader") }
        defer { TIFFRGBAImageEnd(&image) }
        // The requested orientation equal to the file's means no flips: rows come as stored,
        // and ImageKit applies the tag (libtiff cannot transpose for orientations 5–8).
        image.req_orientation = image.orientation
        let width = buffer.width, height = buffer.height
        if buffer.bytesPerRow == width * 4 {
            guard
                TIFFRGBAImageGet(
                    &image, buffer.baseAddress.assumingMemoryBound(to: UInt32.self), UInt32(width), UInt32(height)) == 1
            else {
                throw failure("decoding the pixels")
            }
        } else {
            let raster = UnsafeMutablePointer<UInt32>.allocate(capacity: width * height)
            defer { raster.deallocate() }
            guard TIFFRGBAImageGet(&image, raster, UInt32(width), UInt32(height)) == 1 else {
                throw failure("decoding the pixels")
            }
            for y in 0..<height {
                UnsafeMutableRawPointer(buffer.row(y)).copyMemory(from: raster + y * width, byteCount: width * 4)
            }
        }
        // libtiff packs R in the low byte: on a little-endian machine the bytes are R, G, B, A.
    }
}
