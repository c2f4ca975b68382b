internal import CImageCodecs
import Foundation

/// Progressive PNG state: libpng's push reader fed only the bytes it has not seen.
final class PNGProgress {
    private let limits: DecodingLimits
    private var decoder: OpaquePointer?
    fileprivate var pixels: UnsafeMutableRawPointer?
    fileprivate var bytesPerRow = 0
    fileprivate var byteCount = 0
    fileprivate var refusal: ImageError?
    private var fed = 0
    private var failed = false
    private var shownRows: UInt32 = 0
    private var shownPasses: Int32 = 0

    /// Block sizes (width, height) that the known pixels cover once Adam7 passes 1…7 are done.
    private static let adam7Blocks = [(8, 8), (4, 8), (4, 4), (2, 4), (2, 2), (1, 2), (1, 1)]

    init(limits: DecodingLimits) {
        self.limits = limits
    }

    deinit {
        ik_png_progressive_free(decoder)
        if let pixels { PixelMemory.deallocate(pixels, byteCount: byteCount) }
    }

    func preview(_ data: Data, options: ImageDecodingOptions) -> DecodedImage? {
        guard !failed else { return nil }
        if decoder == nil {
            decoder = ik_png_progressive_new(
                { context, info, stride in
                    let progress = Unmanaged<PNGProgress>.fromOpaque(context!).takeUnretainedValue()
                    let width = Int(info.pointee.width), height = Int(info.pointee.height)
                    do throws(ImageError) {
                        try progress.limits.check(width: width, height: height)
                        let (pixels, bytesPerRow) = try PixelBuffer.allocate(width: width, height: height)
                        pixels.initializeMemory(as: UInt8.self, repeating: 0, count: bytesPerRow * height)
                        progress.pixels = pixels
                        progress.bytesPerRow = bytesPerRow
                        progress.byteCount = bytesPerRow * height
                        stride.pointee = bytesPerRow
                        return pixels
                    } catch {
                        progress.refusal = error
                        return nil
                    }
                }, Unmanaged.passUnretained(self).toOpaque())
            guard decoder != nil else { failed = true; return nil }
        }
        if data.count > fed {
            var message = [CChar](repeating: 0, count: 128)
            let status = data.withUnsafeBytes { bytes in
                ik_png_progressive_feed(decoder!, bytes.baseAddress! + fed, bytes.count - fed, &message, message.count)
            }
            fed = data.count
            // A fatal error: no more previews; the final decode reports it.
            guard status == IK_OK else { failed = true; return nil }
        }
        guard let pixels else { return nil }
        var pass: Int32 = 0, rows: UInt32 = 0, passesDone: Int32 = 0, finished: Int32 = 0
        ik_png_progressive_progress(decoder!, &pass, &rows, &passesDone, &finished)
        let header = ik_png_progressive_info(decoder!).pointee
        let width = Int(header.width), height = Int(header.height)
        let buffer: PixelBuffer
        do {
            buffer = try PixelBuffer(width: width, height: height)
        } catch {
            return nil
        }
        if header.interlaced != 0 {
            // A coarse full-size picture after each completed Adam7 pass: the known pixel of each
            // block is repeated over the block.
            guard passesDone > shownPasses, passesDone > 0 else { return nil }
            shownPasses = passesDone
            let (blockWidth, blockHeight) = Self.adam7Blocks[Int(min(passesDone, 7)) - 1]
            for y in 0..<height {
                let source = (pixels + (y / blockHeight * blockHeight) * bytesPerRow).assumingMemoryBound(
                    to: UInt32.self)
                let destination = UnsafeMutableRawPointer(buffer.row(y)).assumingMemoryBound(to: UInt32.self)
                for x in 0..<width { destination[x] = source[x / blockWidth * blockWidth] }
            }
        } else {
            guard rows > shownRows else { return nil }
            shownRows = rows
            for y in 0..<height {
                (buffer.row(y)).update(
                    from: (pixels + y * bytesPerRow).assumingMemoryBound(to: UInt8.self), count: width * 4)
            }
        }
        var bitmap = buffer.freeze(isOpaque: false)
        let target = DecodeTarget.size(for: PixelSize(width: width, height: height), options: options)
        if target.width != width || target.height != height {
            guard let resized = try? bitmap.resized(to: target) else { return nil }
            bitmap = resized
        }
        return DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png)
    }
}

extension PNGCoder: ProgressiveImageDecoding {
    /// Previews from more rows or a completed Adam7 pass; none for an APNG (shown once complete).
    public func makeProgressiveSession(for signature: ImageSignature, options: ImageDecodingOptions) -> (
        any ProgressiveDecodingSession
    )? {
        guard !signature.isAnimated else { return nil }
        return ProgressiveEngineSession(PNGProgress(limits: options.limits), options: options) {
            $0.preview($1, options: $2)
        }
    }
}
