internal import CWebP
import Foundation

/// Progressive WebP state: a `WebPIDecoder` decoding into ImageKit's buffer as bytes arrive.
/// (Animated WebP has no incremental decoder in libwebp: it is shown once complete.)
final class WebPProgress {
    private let limits: DecodingLimits
    private var decoder: OpaquePointer?
    private var pixels: UnsafeMutableRawPointer?
    private var bytesPerRow = 0
    private var size = PixelSize(width: 0, height: 0)
    private var fed = 0
    private var failed = false
    private var shownRows: Int32 = 0

    init(limits: DecodingLimits) {
        self.limits = limits
    }

    deinit {
        if let decoder { WebPIDelete(decoder) }
        if let pixels { PixelMemory.deallocate(pixels, byteCount: bytesPerRow * size.height) }
    }

    func preview(_ data: Data, options: ImageDecodingOptions) -> DecodedImage? {
        guard !failed else { return nil }
        if decoder == nil {
            var features = WebPBitstreamFeatures()
            let status = data.withUnsafeBytes {
                WebPGetFeatures($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count, &features)
            }
            guard status == VP8_STATUS_OK else {
                if status != VP8_STATUS_NOT_ENOUGH_DATA { failed = true }
                return nil
            }
            size = PixelSize(width: Int(features.width), height: Int(features.height))
            guard (try? limits.check(width: size.width, height: size.height)) != nil,
                let (memory, stride) = try? PixelBuffer.allocate(width: size.width, height: size.height)
            else {
                failed = true
                return nil
            }
            memory.initializeMemory(as: UInt8.self, repeating: 0, count: stride * size.height)
            pixels = memory
            bytesPerRow = stride
            decoder = WebPINewRGB(
                MODE_RGBA, memory.assumingMemoryBound(to: UInt8.self), stride * size.height, Int32(stride))
            guard decoder != nil else { failed = true; return nil }
        }
        if data.count > fed {
            let status = data.withUnsafeBytes { bytes in
                WebPIAppend(decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + fed, bytes.count - fed)
            }
            fed = data.count
            guard status == VP8_STATUS_OK || status == VP8_STATUS_SUSPENDED else { failed = true; return nil }
        }
        var lastRow: Int32 = 0, width: Int32 = 0, height: Int32 = 0, stride: Int32 = 0
        guard WebPIDecGetRGB(decoder, &lastRow, &width, &height, &stride) != nil, lastRow > shownRows, let pixels else {
            return nil
        }
        shownRows = lastRow
        guard let buffer = try? PixelBuffer(width: size.width, height: size.height) else { return nil }
        for y in 0..<size.height {
            buffer.row(y).update(
                from: (pixels + y * bytesPerRow).assumingMemoryBound(to: UInt8.self), count: size.width * 4)
        }
        var bitmap = buffer.freeze(isOpaque: false)
        let target = DecodeTarget.size(for: size, options: options)
        if target != size {
            guard let resized = try? bitmap.resized(to: target) else { return nil }
            bitmap = resized
        }
        return DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .webp)
    }
}

extension WebPCoder: ProgressiveImageDecoding {
    /// Previews from more rows; none for an animated WebP (libwebp has no incremental decoder for it).
    public func makeProgressiveSession(for signature: ImageSignature, options: ImageDecodingOptions) -> (
        any ProgressiveDecodingSession
    )? {
        guard !signature.isAnimated else { return nil }
        return ProgressiveEngineSession(WebPProgress(limits: options.limits), options: options) {
            $0.preview($1, options: $2)
        }
    }
}
