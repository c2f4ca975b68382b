internal import CGIF
import Foundation

/// GIF encoding: one local 256-colour palette per frame (exact when a frame has at most 255
/// colours, giflib's median-cut quantiser otherwise), alpha < 128 as the transparent index.
enum GIFEncoding {
    final class Output {
        var data = Data()
        static let write: OutputFunc = { gif, bytes, count in
            guard let gif, let bytes, count > 0 else { return 0 }
            let output = Unmanaged<Output>.fromOpaque(gif.pointee.UserData).takeUnretainedValue()
            output.data.append(bytes, count: Int(count))
            return count
        }
    }

    static func encode(_ image: DecodedImage, firstFrameOnly: Bool) throws(ImageError) -> Data {
        let image = firstFrameOnly ? image : try image.loadingAllFrames()
        guard let first = image.frames.first else { throw ImageError(.zeroPixels, "the image has no frames") }
        let frames = firstFrameOnly ? [first] : image.frames
        let width = first.bitmap.width, height = first.bitmap.height
        guard width <= 65535, height <= 65535 else {
            throw ImageError(.encodingFailed, "GIF cannot hold \(width)×\(height) pixels (max 65535 per side)")
        }
        let output = Output()
        var error: Int32 = 0
        guard let gif = EGifOpen(Unmanaged.passUnretained(output).toOpaque(), Output.write, &error) else {
            throw ImageError(.encodingFailed, "GIF: \(String(cString: GifErrorString(error)))")
        }
        var closed = false
        defer { if !closed { EGifCloseFile(gif, &error) } }
        func check(_ status: Int32, _ what: String) throws(ImageError) {
            if status != GIF_OK {
                throw ImageError(.encodingFailed, "GIF \(what): \(String(cString: GifErrorString(gif.pointee.Error)))")
            }
        }
        return try withExtendedLifetime(output) { () throws(ImageError) -> Data in
            EGifSetGifVersion(gif, true)
            try check(EGifPutScreenDesc(gif, Int32(width), Int32(height), 8, 0, nil), "screen")
            if frames.count > 1 {
                try check(EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE), "loop extension")
                var name = Array("NETSCAPE2.0".utf8)
                try check(EGifPutExtensionBlock(gif, 11, &name), "loop extension")
                let loops = min(max(image.loopCount, 0), 65535)
                var loop: [UInt8] = [1, UInt8(loops & 0xFF), UInt8(loops >> 8)]
                try check(EGifPutExtensionBlock(gif, 3, &loop), "loop extension")
                try check(EGifPutExtensionTrailer(gif), "loop extension")
            }
            for frame in frames {
                guard frame.bitmap.width == width, frame.bitmap.height == height else {
                    throw ImageError(.encodingFailed, "GIF frames must all be \(width)×\(height)")
                }
                let (indices, palette, transparent) = try quantize(frame.bitmap)
                var control = GraphicsControlBlock(
                    DisposalMode: frames.count > 1 ? DISPOSE_BACKGROUND : 0, UserInputFlag: false,
                    DelayTime: frames.count > 1 ? Int32(max(2, (frame.duration * 100).rounded())) : 0,
                    TransparentColor: Int32(transparent ?? -1))
                var extensionBytes = [GifByteType](repeating: 0, count: 4)
                let length = EGifGCBToExtension(&control, &extensionBytes)
                try check(
                    EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, Int32(length), &extensionBytes), "frame control")
                guard let map = palette.withUnsafeBufferPointer({ GifMakeMapObject(256, $0.baseAddress) }) else {
                    throw ImageError(.internalError, "GIF: out of memory for a palette")
                }
                defer { GifFreeMapObject(map) }
                try check(EGifPutImageDesc(gif, 0, 0, Int32(width), Int32(height), false, map), "image descriptor")
                var mutableIndices = indices
                for y in 0..<height {
                    let status = mutableIndices.withUnsafeMutableBufferPointer {
                        EGifPutLine(gif, $0.baseAddress! + y * width, Int32(width))
                    }
                    try check(status, "image data")
                }
            }
            closed = true
            guard EGifCloseFile(gif, &error) == GIF_OK else {
                throw ImageError(.encodingFailed, "GIF: \(String(cString: GifErrorString(error)))")
            }
            return output.data
        }
    }

    /// Palette indices for `bitmap`, a 256-entry palette, and the transparent index if any.
    static func quantize(_ bitmap: Bitmap) throws(ImageError) -> ([GifByteType], [GifColorType], Int?) {
        let width = bitmap.width, height = bitmap.height
        var indices = [GifByteType](repeating: 0, count: width * height)
        var palette = [GifColorType](repeating: GifColorType(Red: 0, Green: 0, Blue: 0), count: 256)
        var hasTransparency = false
        // Exact palette when the frame has at most 255 opaque colours.
        var exact: [UInt32: UInt8] = [:]
        var fits = true
        for y in 0..<height where fits {
            bitmap.withRow(y) { row in
                for x in 0..<width {
                    let p = x * 4
                    if row[p + 3] < 128 { hasTransparency = true; indices[y * width + x] = 255; continue }
                    let key = UInt32(row[p]) | UInt32(row[p + 1]) << 8 | UInt32(row[p + 2]) << 16
                    if let index = exact[key] {
                        indices[y * width + x] = index
                    } else if exact.count < 255 {
                        let index = UInt8(exact.count)
                        exact[key] = index
                        palette[Int(index)] = GifColorType(Red: row[p], Green: row[p + 1], Blue: row[p + 2])
                        indices[y * width + x] = index
                    } else {
                        fits = false
                        return
                    }
                }
            }
        }
        if fits { return (indices, palette, hasTransparency ? 255 : nil) }

        // Median cut over every pixel, 255 colours, leaving index 255 for transparency.
        var red = [GifByteType](repeating: 0, count: width * height)
        var green = red, blue = red
        for y in 0..<height {
            bitmap.withRow(y) { row in
                for x in 0..<width {
                    red[y * width + x] = row[x * 4]
                    green[y * width + x] = row[x * 4 + 1]
                    blue[y * width + x] = row[x * 4 + 2]
                }
            }
        }
        var size: Int32 = 255
        let status = GifQuantizeBuffer(UInt32(width), UInt32(height), &size, &red, &green, &blue, &indices, &palette)
        guard status == GIF_OK else { throw ImageError(.encodingFailed, "GIF colour quantisation failed") }
        if hasTransparency {
            for y in 0..<height {
                bitmap.withRow(y) { row in
                    for x in 0..<width where row[x * 4 + 3] < 128 { indices[y * width + x] = 255 }
                }
            }
            return (indices, palette, 255)
        }
        return (indices, palette, nil)
    }
}
