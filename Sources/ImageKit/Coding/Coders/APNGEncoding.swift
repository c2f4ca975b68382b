internal import CImageCodecs
import Foundation

/// Animated PNG writing: every frame is encoded as a PNG of its own (``PNGCoder``'s libdeflate
/// writer); ImageKit takes the
/// IDAT data out of them and writes the animation around it (`acTL`, an `fcTL` per frame, the
/// first frame's data as `IDAT` — so a viewer without APNG shows frame 0 — and the others as
/// `fdAT`).
///
/// Each frame after the first is stored as the rectangle where it differs from the frame
/// before it (dispose op NONE, blend op SOURCE: the rectangle replaces those pixels), as
/// encoders such as ffmpeg's and apngasm do; unchanged frames cost a 1×1 rectangle. Every frame
/// uses one colour type: RGBA when any frame has a pixel with alpha below 255, else RGB.
enum APNGEncoding {
    static func encode(_ image: DecodedImage, level: Int) throws(ImageError) -> Data {
        let frames = image.frames
        guard let first = frames.first?.bitmap else { throw ImageError(.zeroPixels, "the image has no frames") }
        let width = first.width, height = first.height
        guard frames.allSatisfy({ $0.bitmap.width == width && $0.bitmap.height == height }) else {
            throw ImageError(.encodingFailed, "APNG: every frame must have the canvas size \(width)×\(height)")
        }
        let keepAlpha = frames.contains { !$0.bitmap.scanIsOpaque() }

        var writer = ChunkWriter()
        writer.bytes += [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var sequence: UInt32 = 0
        var colourType: UInt8?
        for (index, frame) in frames.enumerated() {
            let rect =
                index == 0
                ? PixelRect(x: 0, y: 0, width: width, height: height)
                : changedRect(from: frames[index - 1].bitmap, to: frame.bitmap)
            let png = try encodeRegion(frame.bitmap, rect, keepAlpha: keepAlpha, level: level)
            var idat: [UInt8] = []
            var ihdr: (start: Int, count: Int)?
            png.withUnsafeBytes { bytes in
                PNGChunks.forEach(bytes) { chunk in
                    if chunk.type == PNGChunks.IHDR { ihdr = (chunk.dataStart, chunk.dataCount) }
                    if chunk.type == PNGChunks.IDAT {
                        idat += bytes[chunk.dataStart..<chunk.dataStart + chunk.dataCount]
                    }
                    return true
                }
            }
            guard let ihdr, ihdr.count == 13 else { throw ImageError(.encodingFailed, "APNG: libpng wrote no IHDR") }
            let header = Array(png[ihdr.start..<ihdr.start + ihdr.count])
            if index == 0 {
                colourType = header[9]
                writer.chunk("IHDR", header)
                writer.chunk("acTL", be32(UInt32(frames.count)) + be32(UInt32(clamping: max(image.loopCount, 0))))
            } else if header[9] != colourType {
                throw ImageError(.encodingFailed, "APNG: frame \(index) came out with another colour type")
            }
            let (numerator, denominator) = delayFraction(frame.duration)
            writer.chunk(
                "fcTL",
                be32(sequence) + be32(UInt32(rect.width)) + be32(UInt32(rect.height))
                    + be32(UInt32(rect.x)) + be32(UInt32(rect.y)) + be16(numerator) + be16(denominator)
                    + [0 /* dispose NONE */, 0 /* blend SOURCE */])
            sequence += 1
            if index == 0 {
                writer.chunk("IDAT", idat)
            } else {
                writer.chunk("fdAT", be32(sequence) + idat)
                sequence += 1
            }
        }
        writer.chunk("IEND", [])
        return Data(writer.bytes)
    }

    /// A frame's display time as APNG's 16-bit fraction: milliseconds while they fit, then
    /// hundredths, then tenths of a second.
    static func delayFraction(_ seconds: Double) -> (UInt16, UInt16) {
        let value = max(seconds.isFinite ? seconds : 0, 0)
        for denominator in [1000.0, 100.0, 10.0] where (value * denominator).rounded() <= 65535 {
            return (UInt16((value * denominator).rounded()), UInt16(denominator))
        }
        return (65535, 10)
    }

    /// The smallest rectangle outside which `current` equals `previous` (1×1 when they are equal).
    static func changedRect(from previous: Bitmap, to current: Bitmap) -> PixelRect {
        previous.withUnsafeBytes { old in
            current.withUnsafeBytes { new in
                let rowBytes = current.width * 4
                func row(_ y: Int) -> (UnsafeRawPointer, UnsafeRawPointer) {
                    (old.baseAddress! + y * previous.bytesPerRow, new.baseAddress! + y * current.bytesPerRow)
                }
                func rowDiffers(_ y: Int) -> Bool { let (a, b) = row(y); return memcmp(a, b, rowBytes) != 0 }
                guard let top = (0..<current.height).first(where: rowDiffers) else {
                    return PixelRect(x: 0, y: 0, width: 1, height: 1)
                }
                let bottom = (top..<current.height).last(where: rowDiffers)!
                var left = current.width, right = -1
                for y in top...bottom {
                    let (a, b) = row(y)
                    let pixelsA = a.assumingMemoryBound(to: UInt32.self),
                        pixelsB = b.assumingMemoryBound(to: UInt32.self)
                    var x = 0
                    while x < left, pixelsA[x] == pixelsB[x] { x += 1 }
                    left = min(left, x)
                    var end = current.width - 1
                    while end > right, pixelsA[end] == pixelsB[end] { end -= 1 }
                    right = max(right, end)
                }
                return PixelRect(x: left, y: top, width: max(right - left + 1, 1), height: bottom - top + 1)
            }
        }
    }

    /// `rect` of `bitmap` as a standalone PNG, encoded straight from the bitmap's rows (no copy).
    private static func encodeRegion(_ bitmap: Bitmap, _ rect: PixelRect, keepAlpha: Bool, level: Int)
        throws(ImageError) -> Data
    {
        try bitmap.withUnsafeBytes { pixels throws(ImageError) in
            try PNGCoder.encodeRows(
                pixels.baseAddress! + rect.y * bitmap.bytesPerRow + rect.x * 4, width: rect.width,
                height: rect.height, bytesPerRow: bitmap.bytesPerRow, keepAlpha: keepAlpha, level: level)
        }
    }

    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// PNG chunks: length, type, data, CRC-32 of type and data.
    struct ChunkWriter {
        var bytes: [UInt8] = []

        mutating func chunk(_ type: StaticString, _ data: [UInt8]) {
            bytes += be32(UInt32(data.count))
            let start = bytes.count
            type.withUTF8Buffer { bytes += $0 }
            bytes += data
            bytes += be32(CRC32.checksum(bytes[start...]))
        }
    }
}

/// The CRC-32 of PNG chunks (ISO 3309, polynomial 0xEDB88320), table-driven.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        (0..<8).reduce(UInt32(index)) { crc, _ in crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
    }

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        table.withUnsafeBufferPointer { table in
            ~bytes.reduce(UInt32.max) { crc, byte in table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
    }
}
