import Foundation

/// ICO and CUR decoding, in Swift: the largest entry of the directory (most pixels, then most
/// bits per pixel), stored as PNG (decoded by ``PNGCoder``) or as a DIB with its 1-bit AND mask
/// (32-bit entries use their own alpha). Decode only.
public struct ICOCoder: ImageCoding {
    /// The ICO decoder.
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .ico }
    public func canEncode(_ format: ImageFormat) -> Bool { false }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        let entry = try data.withImageBytes { bytes throws(ImageError) in try Self.largestEntry(bytes) }
        let payload = data.subdata(in: data.startIndex + entry.offset..<data.startIndex + entry.offset + entry.size)
        if payload.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
            var image = try PNGCoder().decode(payload, options: options)
            image.format = .ico
            return image.firstFrame
        }
        let bitmap = try payload.withImageBytes { bytes throws(ImageError) in
            try BMPReader(bytes, headerOffset: 0, pixelOffset: nil, isIconImage: true).decode(options: options)
        }
        return DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .ico)
    }

    /// Throws `encodingFailed`: ImageKit does not write ICO.
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        throw ImageError(.encodingFailed, "ImageKit does not write ICO")
    }

    struct Entry {
        var width: Int, height: Int, bitCount: Int, offset: Int, size: Int
    }

    /// The directory entry with the most pixels (then the most bits per pixel), its bytes
    /// checked to lie inside the file.
    static func largestEntry(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> Entry {
        guard bytes.count >= 6 else { throw ImageError(.truncatedData, "ICO: the header is cut short") }
        let type = BMPReader.u16(bytes, 2), count = Int(BMPReader.u16(bytes, 4))
        guard BMPReader.u16(bytes, 0) == 0, type == 1 || type == 2 else {
            throw ImageError(.badImageData, "ICO: not an icon directory")
        }
        guard count > 0 else { throw ImageError(.zeroPixels, "ICO: the directory has no entries") }
        var best: Entry?
        for index in 0..<count {
            let o = 6 + index * 16
            guard o + 16 <= bytes.count else { break }
            let width = bytes[o] == 0 ? 256 : Int(bytes[o]), height = bytes[o + 1] == 0 ? 256 : Int(bytes[o + 1])
            // CUR keeps the hot spot where ICO keeps planes and bit count.
            let bitCount = type == 1 ? Int(BMPReader.u16(bytes, o + 6)) : 0
            let size = Int(BMPReader.u32(bytes, o + 8)), offset = Int(BMPReader.u32(bytes, o + 12))
            guard size > 0, offset >= 6, offset < bytes.count else { continue }
            let entry = Entry(
                width: width, height: height, bitCount: bitCount, offset: offset, size: min(size, bytes.count - offset))
            if let current = best,
                (current.width * current.height, current.bitCount) >= (width * height, bitCount)
            {
                continue
            }
            best = entry
        }
        guard let best else {
            throw ImageError(
                6 + count * 16 > bytes.count ? .truncatedData : .badImageData,
                "ICO: no entry has its image inside the file")
        }
        return best
    }
}
