internal import CDeflate
internal import CWebP
import Foundation

/// Writes a carried ``DecodedImage/colorProfile`` into encoded JPEG, PNG and WebP data, where
/// each format keeps it: JPEG `ICC_PROFILE` APP2 segments, a PNG `iCCP` chunk, a WebP `ICCP`
/// chunk (AVIF's encoder sets its `colr` box itself).
enum ColorProfileEmbedding {
    /// `jpeg` with the profile in APP2 segments after SOI and a JFIF APP0 (65519 bytes each).
    static func jpeg(_ jpeg: Data, _ profile: ColorProfile) -> Data {
        let icc = profile.iccData
        let chunkSize = 65519
        let chunkCount = (icc.count + chunkSize - 1) / chunkSize
        guard jpeg.count > 4, chunkCount > 0, chunkCount <= 255 else { return jpeg }
        var insertAt = 2
        let bytes = [UInt8](jpeg.prefix(64))
        if bytes.count > 6, bytes[2] == 0xFF, bytes[3] == 0xE0 { insertAt = 4 + (Int(bytes[4]) << 8 | Int(bytes[5])) }
        var segments = Data()
        for index in 0..<chunkCount {
            let start = icc.startIndex + index * chunkSize
            let chunk = icc[start..<min(icc.endIndex, start + chunkSize)]
            let length = 2 + 14 + chunk.count
            segments.append(contentsOf: [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)])
            segments.append(contentsOf: Array("ICC_PROFILE".utf8) + [0, UInt8(index + 1), UInt8(chunkCount)])
            segments.append(chunk)
        }
        var result = Data(jpeg.prefix(insertAt))
        result.append(segments)
        result.append(jpeg.dropFirst(insertAt))
        return result
    }

    /// `png` with an `iCCP` chunk after IHDR (its profile deflated).
    static func png(_ png: Data, _ profile: ColorProfile) -> Data {
        guard png.count > 33, let compressor = libdeflate_alloc_compressor(9) else { return png }
        defer { libdeflate_free_compressor(compressor) }
        let icc = profile.iccData
        let bound = libdeflate_zlib_compress_bound(compressor, icc.count)
        var compressed = [UInt8](repeating: 0, count: bound)
        let written = icc.withUnsafeBytes {
            libdeflate_zlib_compress(compressor, $0.baseAddress, icc.count, &compressed, bound)
        }
        guard written > 0 else { return png }
        var chunk = APNGEncoding.ChunkWriter()
        chunk.chunk("iCCP", Array("ICC Profile".utf8) + [0, 0] + compressed.prefix(written))
        // Signature (8) + IHDR (4 + 4 + 13 + 4).
        var result = Data(png.prefix(33))
        result.append(contentsOf: chunk.bytes)
        result.append(png.dropFirst(33))
        return result
    }

    /// `webp` with an `ICCP` chunk (WebPMux turns a simple file into an extended one).
    static func webp(_ webp: Data, _ profile: ColorProfile) -> Data {
        webp.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> Data in
            profile.iccData.withUnsafeBytes { (icc: UnsafeRawBufferPointer) -> Data in
                var source = WebPData(bytes: input.baseAddress?.assumingMemoryBound(to: UInt8.self), size: input.count)
                guard let mux = WebPMuxCreate(&source, 0) else { return webp }
                defer { WebPMuxDelete(mux) }
                var chunk = WebPData(bytes: icc.baseAddress?.assumingMemoryBound(to: UInt8.self), size: icc.count)
                guard WebPMuxSetChunk(mux, "ICCP", &chunk, 1) == WEBP_MUX_OK else { return webp }
                var output = WebPData()
                guard WebPMuxAssemble(mux, &output) == WEBP_MUX_OK, let bytes = output.bytes else { return webp }
                defer { WebPDataClear(&output) }
                return Data(bytes: bytes, count: output.size)
            }
        }
    }
}
