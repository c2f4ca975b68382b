extension Bitmap {
    /// The largest standard deviation ``blurred(sigma:)`` honours; a larger one is clamped.
    /// (Box sums of 255 × (2r + 1) must fit 16 bits; at this size any photo is a smear anyway.)
    public static let maximumBlurSigma = 100.0

    /// The bitmap blurred with a Gaussian of standard deviation `sigma` pixels, approximated —
    /// like Pillow's `GaussianBlur` and vImage's tent/box blurs — by three box blurs in each
    /// direction, in premultiplied alpha. Edges repeat their outermost pixels.
    ///
    /// The box sums are 16-bit integers in blocks of 64 independent lanes: rows are blurred 16
    /// at a time (16 rows × 4 channels per position), columns in strips of 16 pixels, so every
    /// step of a running sum is a plain loop over 64 lanes that the compiler vectorises.
    public func blurred(sigma: Double) throws(ImageError) -> Bitmap {
        guard sigma.isFinite, sigma >= 0 else { throw ImageError(.invalidArgument, "blur sigma \(sigma) must be finite and ≥ 0") }
        let radii = BoxBlur.radii(sigma: min(sigma, Self.maximumBlurSigma))
        guard radii.contains(where: { $0 > 0 }) else { return self }
        let output = try PixelBuffer(width: width, height: height)
        let pad = radii.max()!
        let lanes = BoxBlur.lanes
        let positions = max(width, height) + 2 * pad + 1
        let scratch = try BoxBlur.Scratch(lineCount: positions * lanes, sumCount: lanes)
        let line = scratch.line, temp = scratch.temp
        let premultiply = !isOpaque
        let rowsPerBlock = lanes / 4

        // Rows, 16 at a time: position x holds pixel x of each of the 16 rows.
        var top = 0
        while top < height {
            let rows = min(rowsPerBlock, height - top)
            for j in 0..<rowsPerBlock {
                let source = (baseAddress + (top + min(j, rows - 1)) * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                var destination = line + pad * lanes + j * 4
                for x in 0..<width {
                    let p = source + x * 4
                    if premultiply {
                        let alpha = UInt32(p[3])
                        destination[0] = UInt16(BoxBlur.multiplyByAlpha(UInt32(p[0]), alpha))
                        destination[1] = UInt16(BoxBlur.multiplyByAlpha(UInt32(p[1]), alpha))
                        destination[2] = UInt16(BoxBlur.multiplyByAlpha(UInt32(p[2]), alpha))
                    } else {
                        destination[0] = UInt16(p[0])
                        destination[1] = UInt16(p[1])
                        destination[2] = UInt16(p[2])
                    }
                    destination[3] = UInt16(p[3])
                    destination += lanes
                }
            }
            BoxBlur.blur(line, using: temp, sum: scratch.sum, count: width, pad: pad, radii: radii)
            for j in 0..<rows {
                let destination = output.row(top + j)
                var source = UnsafePointer(line + pad * lanes + j * 4)
                for x in 0..<width {
                    let p = destination + x * 4
                    p[0] = UInt8(truncatingIfNeeded: source[0])
                    p[1] = UInt8(truncatingIfNeeded: source[1])
                    p[2] = UInt8(truncatingIfNeeded: source[2])
                    p[3] = UInt8(truncatingIfNeeded: source[3])
                    source += lanes
                }
            }
            top += rows
        }

        // Columns, in strips of 16 pixels (64 bytes of each row).
        let rowBytes = width * 4
        var offset = 0
        while offset < rowBytes {
            let bytes = min(lanes, rowBytes - offset)
            for y in 0..<height {
                let source = output.row(y) + offset
                let destination = line + (pad + y) * lanes
                for i in 0..<bytes { destination[i] = UInt16(source[i]) }
                if bytes < lanes { (destination + bytes).update(repeating: 0, count: lanes - bytes) }
            }
            BoxBlur.blur(line, using: temp, sum: scratch.sum, count: height, pad: pad, radii: radii)
            for y in 0..<height {
                let destination = output.row(y) + offset
                let source = line + (pad + y) * lanes
                for i in 0..<bytes { destination[i] = UInt8(truncatingIfNeeded: source[i]) }
            }
            offset += lanes
        }
        if premultiply {
            for y in 0..<height { BoxBlur.unpremultiply(output.row(y), count: width) }
        }
        return output.freeze(isOpaque: isOpaque)
    }
}

enum BoxBlur {
    /// Independent 16-bit lanes per position of a line.
    static let lanes = 64

    /// The line, a second line for the passes, and the running sums.
    final class Scratch {
        let line: UnsafeMutablePointer<UInt16>
        let temp: UnsafeMutablePointer<UInt16>
        let sum: UnsafeMutablePointer<UInt16>
        private let raw: UnsafeMutableRawPointer
        private let bytes: Int
        init(lineCount: Int, sumCount: Int) throws(ImageError) {
            bytes = (2 * lineCount + sumCount) * 2
            guard let raw = PixelMemory.allocate(byteCount: bytes, alignment: 64) else {
                throw ImageError(.internalError, "out of memory for blur lines")
            }
            self.raw = raw
            let all = raw.bindMemory(to: UInt16.self, capacity: 2 * lineCount + sumCount)
            all.initialize(repeating: 0, count: 2 * lineCount + sumCount)
            line = all
            temp = all + lineCount
            sum = all + 2 * lineCount
        }
        deinit { PixelMemory.deallocate(raw, byteCount: bytes) }
    }

    /// Radii of three boxes whose cascade has about the variance of a Gaussian of `sigma`
    /// (Kovesi, "Fast almost-Gaussian filtering": widths wl and wl + 2, wl the largest odd
    /// width below the ideal one, as many of each as brings the variance closest).
    static func radii(sigma: Double, passes: Int = 3) -> [Int] {
        guard sigma > 0 else { return Array(repeating: 0, count: passes) }
        let n = Double(passes)
        let ideal = (12 * sigma * sigma / n + 1).squareRoot()
        var lower = Int(ideal)
        if lower % 2 == 0 { lower -= 1 }
        lower = max(lower, 1)
        let wl = Double(lower)
        let m = Int(((12 * sigma * sigma - n * wl * wl - 4 * n * wl - 3 * n) / (-4 * wl - 4)).rounded())
        return (0..<passes).map { ($0 < m ? lower : lower + 2) / 2 }
    }

    /// Three box passes over `line` (`count` positions of ``lanes`` lanes, starting after
    /// `pad` positions of margin), ending in `line`.
    static func blur(_ line: UnsafeMutablePointer<UInt16>, using temp: UnsafeMutablePointer<UInt16>,
                     sum: UnsafeMutablePointer<UInt16>, count: Int, pad: Int, radii: [Int]) {
        replicateEdges(line, count: count, pad: pad)
        var source = line, destination = temp
        for radius in radii where radius > 0 {
            boxPass(source, into: destination, sum: sum, count: count, pad: pad, radius: radius)
            swap(&source, &destination)
        }
        if source != line { line.update(from: source, count: (count + 2 * pad + 1) * lanes) }
    }

    /// One box of width 2r + 1: a running sum per lane, divided by multiplying with
    /// ⌈2¹⁶ / width⌉ (exact rounding for widths up to 15; within one level above).
    static func boxPass(_ source: UnsafeMutablePointer<UInt16>, into destination: UnsafeMutablePointer<UInt16>,
                        sum: UnsafeMutablePointer<UInt16>, count: Int, pad: Int, radius: Int) {
        let lanes = Self.lanes
        let width = 2 * radius + 1
        let multiplier = UInt16((65536 + width - 1) / width)
        let half = UInt16(width / 2)
        sum.update(repeating: 0, count: lanes)
        for k in -radius...radius {
            let row = source + (pad + k) * lanes
            for i in 0..<lanes { sum[i] &+= row[i] }
        }
        for position in 0..<count {
            let out = destination + (pad + position) * lanes
            let entering = source + (pad + position + radius + 1) * lanes
            let leaving = source + (pad + position - radius) * lanes
            for i in 0..<lanes {
                let total = sum[i]
                out[i] = UInt16(truncatingIfNeeded: (UInt32(total &+ half) &* UInt32(multiplier)) &>> 16)
                sum[i] = total &+ entering[i] &- leaving[i]
            }
        }
        replicateEdges(destination, count: count, pad: pad)
    }

    /// Fills the margins with copies of the first and last positions.
    static func replicateEdges(_ line: UnsafeMutablePointer<UInt16>, count: Int, pad: Int) {
        let first = line + pad * lanes, last = line + (pad + count - 1) * lanes
        for k in 0..<pad { (line + k * lanes).update(from: first, count: lanes) }
        for k in (pad + count)..<(2 * pad + count + 1) { (line + k * lanes).update(from: last, count: lanes) }
    }

    /// `value × alpha / 255`, rounded.
    @inline(__always)
    static func multiplyByAlpha(_ value: UInt32, _ alpha: UInt32) -> UInt32 {
        let product = value * alpha + 128
        return (product + (product >> 8)) >> 8
    }

    static func unpremultiply(_ row: UnsafeMutablePointer<UInt8>, count: Int) {
        for x in 0..<count {
            let p = row + x * 4
            let alpha = UInt32(p[3])
            if alpha == 255 { continue }
            if alpha == 0 { p[0] = 0; p[1] = 0; p[2] = 0; continue }
            p[0] = UInt8(min(255, (UInt32(p[0]) * 255 + alpha / 2) / alpha))
            p[1] = UInt8(min(255, (UInt32(p[1]) * 255 + alpha / 2) / alpha))
            p[2] = UInt8(min(255, (UInt32(p[2]) * 255 + alpha / 2) / alpha))
        }
    }
}
