#if canImport(Glibc)
import Glibc
#endif

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
        let row: UnsafeMutablePointer<SIMD4<Float>>
        /// Opaque sources: the band's byte sums, one UInt16 per source channel.
        let sums: UnsafeMutablePointer<UInt16>
        let bandBytes: Int, ringBytes: Int, rowBytes: Int, sumBytes: Int
        // Allocated through PixelMemory so the benchmark's peak pixel memory includes them.
        init(bandCount: Int, ringCount: Int, rowCount: Int, sumCount: Int) throws(ImageError) {
            let stride = MemoryLayout<SIMD4<Float>>.stride
            // Rounded up to whole 16-lane vectors so the summing loop needs no scalar tail.
            let sumCount = (sumCount + 15) / 16 * 16
            guard let bandMemory = PixelMemory.allocate(byteCount: bandCount * stride, alignment: 16),
                let ringMemory = PixelMemory.allocate(byteCount: ringCount * stride, alignment: 16),
                let rowMemory = PixelMemory.allocate(byteCount: rowCount * stride, alignment: 16),
                let sumMemory = PixelMemory.allocate(byteCount: sumCount * 2, alignment: 64)
            else {
                throw ImageError(.internalError, "out of memory for resampling rows")
            }
            bandBytes = bandCount * stride
            ringBytes = ringCount * stride
            rowBytes = rowCount * stride
            sumBytes = sumCount * 2
            band = bandMemory.bindMemory(to: SIMD4<Float>.self, capacity: bandCount)
            band.initialize(repeating: .zero, count: bandCount)
            ring = ringMemory.bindMemory(to: SIMD4<Float>.self, capacity: ringCount)
            ring.initialize(repeating: .zero, count: ringCount)
            row = rowMemory.bindMemory(to: SIMD4<Float>.self, capacity: rowCount)
            row.initialize(repeating: .zero, count: rowCount)
            sums = sumMemory.bindMemory(to: UInt16.self, capacity: sumCount)
            sums.initialize(repeating: 0, count: sumCount)
        }
        deinit {
            PixelMemory.deallocate(UnsafeMutableRawPointer(band), byteCount: bandBytes)
            PixelMemory.deallocate(UnsafeMutableRawPointer(ring), byteCount: ringBytes)
            PixelMemory.deallocate(UnsafeMutableRawPointer(row), byteCount: rowBytes)
            PixelMemory.deallocate(UnsafeMutableRawPointer(sums), byteCount: sumBytes)
        }
    }

    private let scratch: Scratch
    /// Whether the band is summed in ``Scratch/sums`` (opaque sources) rather than in floats.
    private let sumsIntegers: Bool
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
            var start = [Int](repeating: 0, count: outSize)
            var count = [Int](repeating: 0, count: outSize)
            var weights = [Float](repeating: 0, count: stride * outSize)
            let stride = self.stride
            // The taps of one pixel are evenly spaced: sin(πx/3) for each comes from the first by
            // rotation (angle addition), one sin and cos per pixel instead of one sin per tap.
            let step = Double.pi / 3 / filterScale
            let (stepSine, stepCosine) = (sin(step), cos(step))
            // One scratch row of Double taps for every output pixel (no allocation per pixel).
            withUnsafeTemporaryAllocation(of: Double.self, capacity: stride) { local in
                for index in 0..<outSize {
                    let center = (Double(index) + 0.5) * scale
                    let low = max(Int(center - support + 0.5), 0)
                    let high = min(Int(center + support + 0.5), available)
                    let taps = max(0, min(high - low, stride))
                    var sum = 0.0
                    let first = Double.pi / 3 * ((Double(low) - center + 0.5) / filterScale)
                    var sine = sin(first), cosine = cos(first)
                    for tap in 0..<taps {
                        let w = Self.lanczos((Double(tap + low) - center + 0.5) / filterScale, sineOfThird: sine)
                        (sine, cosine) = (sine * stepCosine + cosine * stepSine, cosine * stepCosine - sine * stepSine)
                        local[tap] = w
                        sum += w
                    }
                    let normal = sum != 0 ? 1 / sum : 0
                    for tap in 0..<taps { weights[index * stride + tap] = Float(local[tap] * normal) }
                    start[index] = low
                    count[index] = taps
                }
            }
            self.start = start
            self.count = count
            self.weights = weights
        }

        static func lanczos(_ x: Double) -> Double {
            lanczos(x, sineOfThird: sin(Double.pi * x / 3))
        }

        /// Lanczos-3 at `x` given s = sin(πx/3): sinc(x)·sinc(x/3), with sin(πx) = 3s − 4s³.
        static func lanczos(_ x: Double, sineOfThird s: Double) -> Double {
            guard x > -3, x < 3 else { return 0 }
            guard x != 0 else { return 1 }
            let px = Double.pi * x
            return 3 * s * (3 * s - 4 * s * s * s) / (px * px)
        }
    }

    /// - Parameter extent: how many source pixels' worth of picture the rows hold, when that is
    ///   fractional: a DCT-scaled JPEG of 5250 px at 1/8 has 657 pixels holding 656.25 px of
    ///   picture. Using the true extent keeps the output from shifting by a fraction of a pixel.
    /// - Parameter reducingGap: box-reduce while the source is more than this many times the
    ///   target (Pillow's `reducing_gap`, 2). A source that is already a box average (a
    ///   DCT-scaled JPEG) can take 1: the Lanczos step then has a third of the taps.
    init(
        source: PixelSize, target: PixelSize, isOpaque: Bool, extent: (width: Double, height: Double)? = nil,
        reducingGap: Double = 2
    ) throws(ImageError) {
        precondition(target.width > 0 && target.height > 0 && source.width > 0 && source.height > 0)
        let (boxX, boxY) = Self.boxFactors(source: source, target: target, reducingGap: reducingGap)
        let reducedWidth = (source.width + boxX - 1) / boxX
        let reducedHeight = (source.height + boxY - 1) / boxY
        let extentWidth = extent?.width ?? Double(source.width), extentHeight = extent?.height ?? Double(source.height)
        let horizontal = Coefficients(
            inSize: extentWidth / Double(boxX), outSize: target.width, available: reducedWidth)
        let vertical = Coefficients(
            inSize: extentHeight / Double(boxY), outSize: target.height, available: reducedHeight)
        let ringRows = max(1, vertical.count.max() ?? 1)
        // Everything that can throw happens before `self` is touched (a noncopyable value may
        // not be left half-initialised).
        // Opaque bands of up to 257 rows are summed as 16-bit integers (255 × 257 fits), a
        // vector add per 16 bytes; the rest go through premultiplied floats pixel by pixel.
        let sumsBytes = isOpaque && boxY <= 257 ? source.width * 4 : 0
        let scratch = try Scratch(
            bandCount: reducedWidth, ringCount: ringRows * target.width,
            rowCount: target.width, sumCount: sumsBytes)
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
        self.sumsIntegers = sumsBytes > 0
        self.output = .some(consume output)
    }

    /// How many source pixels the box step averages in each direction: while the source is more
    /// than `reducingGap` times the target.
    static func boxFactors(source: PixelSize, target: PixelSize, reducingGap: Double) -> (x: Int, y: Int) {
        (
            max(1, Int(Double(source.width) / (Double(target.width) * reducingGap))),
            max(1, Int(Double(source.height) / (Double(target.height) * reducingGap)))
        )
    }

    /// Adds the next source row (`sourceWidth` RGBA8 pixels, straight alpha).
    func push(row: UnsafePointer<UInt8>) {
        guard sourceRowsSeen < sourceHeight else { return }
        if sumsIntegers {
            addToSums(row)
        } else {
            addToBand(row)
        }
        sourceRowsSeen += 1
        bandRows += 1
        if bandRows == boxY || sourceRowsSeen == sourceHeight { emitReducedRow() }
    }

    /// Adds a row's bytes to the 16-bit band sums, 16 at a time.
    private func addToSums(_ row: UnsafePointer<UInt8>) {
        let count = sourceWidth * 4
        let source = UnsafeRawPointer(row)
        let sums = UnsafeMutableRawPointer(scratch.sums)
        var index = 0
        while index + 16 <= count {
            let bytes = source.loadUnaligned(fromByteOffset: index, as: SIMD16<UInt8>.self)
            let sum = sums.load(fromByteOffset: index * 2, as: SIMD16<UInt16>.self)
            sums.storeBytes(
                of: sum &+ SIMD16<UInt16>(truncatingIfNeeded: bytes), toByteOffset: index * 2, as: SIMD16<UInt16>.self)
            index += 16
        }
        while index < count {
            scratch.sums[index] &+= UInt16(row[index])
            index += 1
        }
    }

    /// Moves the 16-bit band sums into the float band, box-summing `boxX` pixels per column.
    private func sumsToBand() {
        let sums = scratch.sums
        var x = 0
        for column in 0..<reducedWidth {
            var sum = SIMD4<Float>.zero
            let end = min(x + boxX, sourceWidth)
            while x < end {
                sum += SIMD4<Float>(UnsafeRawPointer(sums + x * 4).loadUnaligned(as: SIMD4<UInt16>.self))
                x += 1
            }
            band[column] = sum
        }
        sums.update(repeating: 0, count: sourceWidth * 4)
    }

    /// Adds a row to the float band, premultiplied, box-summing `boxX` pixels per column.
    private func addToBand(_ row: UnsafePointer<UInt8>) {
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
    }

    /// Divides the band into one reduced row, filters it horizontally into the ring, and emits
    /// every output row whose vertical window is now complete.
    private func emitReducedRow() {
        if sumsIntegers { sumsToBand() }
        let slot = ring + (reducedRowsDone % ringRows) * targetWidth
        let rows = Float(bandRows)
        let lastColumnWidth = sourceWidth - (reducedWidth - 1) * boxX
        for column in 0..<reducedWidth {
            let columns = Float(column == reducedWidth - 1 ? lastColumnWidth : boxX)
            band[column] /= columns * rows
        }
        let band = self.band, targetWidth = self.targetWidth, stride = horizontal.stride
        horizontal.weights.withUnsafeBufferPointer { weights in
            horizontal.start.withUnsafeBufferPointer { starts in
                horizontal.count.withUnsafeBufferPointer { counts in
                    for index in 0..<targetWidth {
                        // Four running sums: one sum would wait on the previous add at
                        // every tap (a latency chain), four keep the adder busy.
                        var sum0 = SIMD4<Float>.zero, sum1 = SIMD4<Float>.zero
                        var sum2 = SIMD4<Float>.zero, sum3 = SIMD4<Float>.zero
                        let source = band + starts[index]
                        let w = weights.baseAddress! + index * stride
                        let taps = counts[index]
                        var tap = 0
                        while tap + 4 <= taps {
                            sum0 += source[tap] * w[tap]
                            sum1 += source[tap + 1] * w[tap + 1]
                            sum2 += source[tap + 2] * w[tap + 2]
                            sum3 += source[tap + 3] * w[tap + 3]
                            tap += 4
                        }
                        while tap < taps {
                            sum0 += source[tap] * w[tap]
                            tap += 1
                        }
                        slot[index] = (sum0 + sum1) + (sum2 + sum3)
                    }
                }
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
        let sum = scratch.row, ring = self.ring, targetWidth = self.targetWidth, ringRows = self.ringRows
        // Tap by tap over whole rows: contiguous loops the compiler vectorises, and the ring
        // index is worked out once per tap rather than once per pixel.
        vertical.weights.withUnsafeBufferPointer { weights in
            let w = weights.baseAddress! + outputRowsDone * vertical.stride
            let firstRow = ring + (first % ringRows) * targetWidth
            let w0 = w[0]
            for x in 0..<targetWidth { sum[x] = firstRow[x] * w0 }
            for tap in 1..<max(taps, 1) {
                let source = ring + ((first + tap) % ringRows) * targetWidth
                let weight = w[tap]
                for x in 0..<targetWidth { sum[x] += source[x] * weight }
            }
        }
        for x in 0..<targetWidth {
            let sum = sum[x]
            let p = destination + x * 4
            let alpha = min(max(sum.w, 0), 255)
            if isOpaque || alpha >= 254.5 {
                p[0] = UInt8(min(max(sum.x, 0), 255) + 0.5)
                p[1] = UInt8(min(max(sum.y, 0), 255) + 0.5)
                p[2] = UInt8(min(max(sum.z, 0), 255) + 0.5)
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
        outputRowsDone += 1
    }

    /// The finished bitmap, once every source row has been pushed (call once).
    func finish() -> Bitmap {
        precondition(
            outputRowsDone == targetHeight, "Resampler finished after \(sourceRowsSeen) of \(sourceHeight) rows")
        return output.take()!.freeze(isOpaque: isOpaque)
    }
}
