/// A streaming, high-quality downscaler: feed it source rows top to bottom, get a bitmap of the
/// target size.
///
/// Quality follows Pillow's `thumbnail(…, LANCZOS)`: an integer box reduction first (while the
/// source is more than twice the target: Pillow's `reducing_gap = 2`), then a separable
/// Lanczos-3 filter. All filtering happens in premultiplied alpha, so transparent pixels'
/// colours do not bleed into visible edges. Only a ring of filtered rows is kept, so memory is
/// about the output's, never the source's — which lets a PNG decoder shrink while it reads.
final class Resampler {
    let sourceWidth: Int
    let sourceHeight: Int
    let targetWidth: Int
    let targetHeight: Int
    private let boxX: Int, boxY: Int
    private let reducedWidth: Int, reducedHeight: Int
    private let isOpaque: Bool

    private let horizontal: Coefficients
    private let vertical: Coefficients

    /// Owns the scratch rows.
    private final class Scratch {
        let band: UnsafeMutablePointer<SIMD4<Float>>
        let ring: UnsafeMutablePointer<SIMD4<Float>>
        let bandBytes: Int
        let ringBytes: Int
        // Allocated through PixelMemory so the benchmark's peak pixel memory includes them.
        init(bandCount: Int, ringCount: Int) throws(ImageError) {
            let stride = MemoryLayout<SIMD4<Float>>.stride
            guard let bandMemory = PixelMemory.allocate(byteCount: bandCount * stride, alignment: 16),
                  let ringMemory = PixelMemory.allocate(byteCount: ringCount * stride, alignment: 16) else {
                throw ImageError(.internalError, "out of memory for resampling rows")
            }
            bandBytes = bandCount * stride
            ringBytes = ringCount * stride
            band = bandMemory.bindMemory(to: SIMD4<Float>.self, capacity: bandCount)
            band.initialize(repeating: .zero, count: bandCount)
            ring = ringMemory.bindMemory(to: SIMD4<Float>.self, capacity: ringCount)
            ring.initialize(repeating: .zero, count: ringCount)
        }
        deinit {
            PixelMemory.deallocate(UnsafeMutableRawPointer(band), byteCount: bandBytes)
            PixelMemory.deallocate(UnsafeMutableRawPointer(ring), byteCount: ringBytes)
        }
    }

    private let scratch: Scratch
    /// Sum of the current band of `boxY` source rows, box-reduced horizontally.
    private var band: UnsafeMutablePointer<SIMD4<Float>> { scratch.band }
    private var bandRows = 0
    private var sourceRowsSeen = 0
    /// Horizontally filtered reduced rows, `ringRows` of them, `targetWidth` wide.
    private var ring: UnsafeMutablePointer<SIMD4<Float>> { scratch.ring }
    private let ringRows: Int
    private var reducedRowsDone = 0
    private var outputRowsDone = 0
    private var output: PixelBuffer?

    /// Filter taps: for output index `i`, `count[i]` weights starting at source `start[i]`.
    struct Coefficients {
        var start: [Int]
        var count: [Int]
        var weights: [Float]
        var stride: Int

        /// Pillow's `precompute_coeffs` for Lanczos-3 from `inSize` (possibly fractional, after a
        /// box reduction) to `outSize`, clamped to `available` source samples.
        init(inSize: Double, outSize: Int, available: Int) {
            let scale = inSize / Double(outSize)
            let filterScale = max(scale, 1)
            let support = 3 * filterScale
            stride = Int(support.rounded(.up)) * 2 + 1
            start = []
            count = []
            weights = [Float](repeating: 0, count: stride * outSize)
            for index in 0..<outSize {
                let center = (Double(index) + 0.5) * scale
                let low = max(Int(center - support + 0.5), 0)
                let high = min(Int(center + support + 0.5), available)
                let taps = max(0, min(high - low, stride))
                var sum = 0.0
                var local = [Double](repeating: 0, count: taps)
                for tap in 0..<taps {
                    let w = Self.lanczos((Double(tap + low) - center + 0.5) / filterScale)
                    local[tap] = w
                    sum += w
                }
                for tap in 0..<taps { weights[index * stride + tap] = Float(sum != 0 ? local[tap] / sum : 0) }
                start.append(low)
                count.append(taps)
            }
        }

        static func lanczos(_ x: Double) -> Double {
            guard x > -3, x < 3 else { return 0 }
            return sinc(x) * sinc(x / 3)
        }

        static func sinc(_ x: Double) -> Double {
            if x == 0 { return 1 }
            let px = Double.pi * x
            return sin(px) / px
        }
    }

    /// - Parameter extent: how many source pixels' worth of picture the rows hold, when that is
    ///   fractional: a DCT-scaled JPEG of 5250 px at 1/8 has 657 pixels holding 656.25 px of
    ///   picture. Using the true extent keeps the output from shifting by a fraction of a pixel.
    /// - Parameter reducingGap: box-reduce while the source is more than this many times the
    ///   target (Pillow's `reducing_gap`, 2). A source that is already a box average (a
    ///   DCT-scaled JPEG) can take 1: the Lanczos step then has a third of the taps.
    init(source: PixelSize, target: PixelSize, isOpaque: Bool, extent: (width: Double, height: Double)? = nil,
         reducingGap: Double = 2) throws(ImageError) {
        precondition(target.width > 0 && target.height > 0 && source.width > 0 && source.height > 0)
        let boxX = max(1, Int(Double(source.width) / (Double(target.width) * reducingGap)))
        let boxY = max(1, Int(Double(source.height) / (Double(target.height) * reducingGap)))
        let reducedWidth = (source.width + boxX - 1) / boxX
        let reducedHeight = (source.height + boxY - 1) / boxY
        let extentWidth = extent?.width ?? Double(source.width), extentHeight = extent?.height ?? Double(source.height)
        let horizontal = Coefficients(inSize: extentWidth / Double(boxX), outSize: target.width, available: reducedWidth)
        let vertical = Coefficients(inSize: extentHeight / Double(boxY), outSize: target.height, available: reducedHeight)
        let ringRows = max(1, vertical.count.max() ?? 1)
        // Everything that can throw happens before `self` is touched (a noncopyable value may
        // not be left half-initialised).
        let scratch = try Scratch(bandCount: reducedWidth, ringCount: ringRows * target.width)
        let output = try PixelBuffer(width: target.width, height: target.height)
        self.sourceWidth = source.width
        self.sourceHeight = source.height
        self.targetWidth = target.width
        self.targetHeight = target.height
        self.isOpaque = isOpaque
        self.boxX = boxX
        self.boxY = boxY
        self.reducedWidth = reducedWidth
        self.reducedHeight = reducedHeight
        self.horizontal = horizontal
        self.vertical = vertical
        self.ringRows = ringRows
        self.scratch = scratch
        self.output = .some(consume output)
    }

    /// Adds the next source row (`sourceWidth` RGBA8 pixels, straight alpha).
    func push(row: UnsafePointer<UInt8>) {
        guard sourceRowsSeen < sourceHeight else { return }
        let scale: Float = 1 / 255
        var x = 0
        var column = 0
        while column < reducedWidth {
            var sum = SIMD4<Float>.zero
            let end = min(x + boxX, sourceWidth)
            while x < end {
                let p = row + x * 4
                var pixel = SIMD4<Float>(Float(p[0]), Float(p[1]), Float(p[2]), Float(p[3]))
                if !isOpaque {
                    let alpha = pixel.w * scale
                    pixel.x *= alpha
                    pixel.y *= alpha
                    pixel.z *= alpha
                }
                sum += pixel
                x += 1
            }
            band[column] += sum
            column += 1
        }
        sourceRowsSeen += 1
        bandRows += 1
        if bandRows == boxY || sourceRowsSeen == sourceHeight { emitReducedRow() }
    }

    /// Divides the band into one reduced row, filters it horizontally into the ring, and emits
    /// every output row whose vertical window is now complete.
    private func emitReducedRow() {
        let slot = ring + (reducedRowsDone % ringRows) * targetWidth
        let rows = Float(bandRows)
        let lastColumnWidth = sourceWidth - (reducedWidth - 1) * boxX
        for column in 0..<reducedWidth {
            let columns = Float(column == reducedWidth - 1 ? lastColumnWidth : boxX)
            band[column] /= columns * rows
        }
        horizontal.weights.withUnsafeBufferPointer { weights in
            for index in 0..<targetWidth {
                var sum = SIMD4<Float>.zero
                let base = horizontal.start[index]
                let taps = horizontal.count[index]
                let w = weights.baseAddress! + index * horizontal.stride
                for tap in 0..<taps { sum += band[base + tap] * w[tap] }
                slot[index] = sum
            }
        }
        band.update(repeating: .zero, count: reducedWidth)
        bandRows = 0
        reducedRowsDone += 1

        while outputRowsDone < targetHeight {
            let first = vertical.start[outputRowsDone]
            let taps = vertical.count[outputRowsDone]
            guard first + taps <= reducedRowsDone else { break }
            emitOutputRow(first: first, taps: taps)
        }
    }

    private func emitOutputRow(first: Int, taps: Int) {
        let destination = output!.row(outputRowsDone)
        vertical.weights.withUnsafeBufferPointer { weights in
            let w = weights.baseAddress! + outputRowsDone * vertical.stride
            for x in 0..<targetWidth {
                var sum = SIMD4<Float>.zero
                for tap in 0..<taps {
                    sum += ring[((first + tap) % ringRows) * targetWidth + x] * w[tap]
                }
                let p = destination + x * 4
                let alpha = min(max(sum.w, 0), 255)
                if isOpaque || alpha >= 254.5 {
                    p[0] = UInt8(min(max(sum.x, 0), 255).rounded())
                    p[1] = UInt8(min(max(sum.y, 0), 255).rounded())
                    p[2] = UInt8(min(max(sum.z, 0), 255).rounded())
                    p[3] = isOpaque ? 255 : UInt8(alpha.rounded())
                } else if alpha < 0.5 {
                    p[0] = 0; p[1] = 0; p[2] = 0; p[3] = 0
                } else {
                    let unpremultiply = 255 / alpha
                    p[0] = UInt8(min(max(sum.x * unpremultiply, 0), 255).rounded())
                    p[1] = UInt8(min(max(sum.y * unpremultiply, 0), 255).rounded())
                    p[2] = UInt8(min(max(sum.z * unpremultiply, 0), 255).rounded())
                    p[3] = UInt8(alpha.rounded())
                }
            }
        }
        outputRowsDone += 1
    }

    /// The finished bitmap, once every source row has been pushed (call once).
    func finish() -> Bitmap {
        precondition(outputRowsDone == targetHeight, "Resampler finished after \(sourceRowsSeen) of \(sourceHeight) rows")
        return output.take()!.freeze(isOpaque: isOpaque)
    }
}

#if canImport(Glibc)
import Glibc
#endif

extension Bitmap {
    /// This bitmap scaled to `size` with the ``Resampler`` (Lanczos-3 in premultiplied alpha).
    /// Returns `self` when the size is unchanged.
    public func resized(to size: PixelSize) throws(ImageError) -> Bitmap {
        try resized(to: size, extent: nil)
    }

    func resized(to size: PixelSize, extent: (width: Double, height: Double)?, reducingGap: Double = 2) throws(ImageError) -> Bitmap {
        if size.width == width && size.height == height && extent == nil { return self }
        let resampler = try Resampler(source: PixelSize(width: width, height: height), target: size, isOpaque: isOpaque,
                                      extent: extent, reducingGap: reducingGap)
        for y in 0..<height {
            resampler.push(row: (baseAddress + y * bytesPerRow).assumingMemoryBound(to: UInt8.self))
        }
        return resampler.finish()
    }
}

extension DecodedImage {
    /// Every frame scaled to `size`.
    public func resized(to size: PixelSize) throws(ImageError) -> DecodedImage {
        var copy = self
        for index in copy.frames.indices {
            copy.frames[index].bitmap = try copy.frames[index].bitmap.resized(to: size)
        }
        return copy
    }
}
