import Foundation

/// What an app shows before an image arrives, and what it indexes an image by: BlurHash and
/// ThumbHash placeholders, the average colour, a palette, and a perceptual hash — the facts
/// imgproxy's `/info` answers (`bh`, `th`, `avg`, `p`, `ph`), computed on the pixels given. Give
/// them a small image (a decode-time thumbnail: ``ImageDecodingOptions/thumbnailPixelSize`` of
/// 100–200 px), never the full picture: every one of them is a low-frequency summary.
///
/// ```swift
/// var options = ImageDecodingOptions()
/// options.thumbnailPixelSize = PixelSize(width: 100, height: 100)
/// let small = try ImageCodersManager.shared.decode(data, options: options).frames[0].bitmap
/// let placeholder = try small.blurHash(componentsX: 4, componentsY: 3)   // "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
/// let thumbHash = try small.thumbHash().base64EncodedString()
/// print(placeholder, thumbHash, small.averageColor(), String(small.perceptualHash(), radix: 16))
/// ```
extension Bitmap {
    // MARK: BlurHash

    /// The image's [BlurHash](https://blurha.sh): `componentsX` × `componentsY` cosine components
    /// (1…9 each) of its colours in linear light, quantised into a base-83 string of
    /// 6 + 2 × (componentsX × componentsY − 1) characters. Alpha is ignored, as the format does.
    /// - Throws: ``ImageError/Code/invalidArgument`` for a component count outside 1…9.
    public func blurHash(componentsX: Int = 4, componentsY: Int = 3) throws(ImageError) -> String {
        guard (1...9).contains(componentsX), (1...9).contains(componentsY) else {
            throw ImageError(.invalidArgument, "BlurHash components must be 1...9, not \(componentsX)x\(componentsY)")
        }
        let linear = Self.srgbToLinearTable
        let xs = Self.cosines(count: componentsX, over: width, offset: 0)
        let ys = Self.cosines(count: componentsY, over: height, offset: 0)
        var factors = [(Double, Double, Double)](repeating: (0, 0, 0), count: componentsX * componentsY)
        withUnsafeBytes { pixels in
            for y in 0..<height {
                let row = y * bytesPerRow
                for x in 0..<width {
                    let r = linear[Int(pixels[row + x * 4])], g = linear[Int(pixels[row + x * 4 + 1])]
                    let b = linear[Int(pixels[row + x * 4 + 2])]
                    for j in 0..<componentsY {
                        let fy = ys[j * height + y]
                        for i in 0..<componentsX {
                            let basis = xs[i * width + x] * fy
                            factors[j * componentsX + i].0 += basis * r
                            factors[j * componentsX + i].1 += basis * g
                            factors[j * componentsX + i].2 += basis * b
                        }
                    }
                }
            }
        }
        let count = Double(width * height)
        for index in factors.indices {
            let normalisation: Double = index == 0 ? 1 : 2
            factors[index].0 *= normalisation / count
            factors[index].1 *= normalisation / count
            factors[index].2 *= normalisation / count
        }
        var hash = Self.base83((componentsX - 1) + (componentsY - 1) * 9, length: 1)
        let ac = factors.dropFirst()
        let maximum: Double
        if ac.isEmpty {
            maximum = 1
            hash += Self.base83(0, length: 1)
        } else {
            let largest = ac.map { max(abs($0.0), abs($0.1), abs($0.2)) }.max() ?? 0
            let quantised = max(0, min(82, Int((largest * 166 - 0.5).rounded(.down))))
            maximum = Double(quantised + 1) / 166
            hash += Self.base83(quantised, length: 1)
        }
        let dc = factors[0]
        hash += Self.base83(
            (Self.linearToSRGB(dc.0) << 16) + (Self.linearToSRGB(dc.1) << 8) + Self.linearToSRGB(dc.2), length: 4)
        for factor in ac {
            func quantise(_ value: Double) -> Int {
                let scaled = value / maximum
                let signed = scaled < 0 ? -(-scaled).squareRoot() : scaled.squareRoot()
                return max(0, min(18, Int((signed * 9 + 9.5).rounded(.down))))
            }
            hash += Self.base83(quantise(factor.0) * 361 + quantise(factor.1) * 19 + quantise(factor.2), length: 2)
        }
        return hash
    }

    private static let base83Digits = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    private static func base83(_ value: Int, length: Int) -> String {
        var digits: [Character] = []
        var divisor = 1
        for _ in 1..<length { divisor *= 83 }
        for _ in 0..<length {
            digits.append(base83Digits[(value / divisor) % 83])
            divisor /= 83
        }
        return String(digits)
    }

    private static let srgbToLinearTable: [Double] = (0...255).map { code in
        let value = Double(code) / 255
        return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    private static func linearToSRGB(_ linear: Double) -> Int {
        let value = min(max(linear, 0), 1)
        return value <= 0.0031308
            ? Int(value * 12.92 * 255 + 0.5) : Int((1.055 * pow(value, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    /// cos(π·k·(n + offset)/size) for k in 0..<count, n in 0..<size, row k at k·size.
    private static func cosines(count: Int, over size: Int, offset: Double) -> [Double] {
        var table = [Double](repeating: 0, count: count * size)
        for k in 0..<count {
            for n in 0..<size { table[k * size + n] = cos(Double.pi * Double(k) * (Double(n) + offset) / Double(size)) }
        }
        return table
    }

    // MARK: ThumbHash

    /// The image's [ThumbHash](https://evanw.github.io/thumbhash/) bytes (up to 25: a DCT of its
    /// luminance, two chroma planes and, when it has transparency, alpha; its aspect ratio and
    /// average colour). A picture over 100 px on a side is first scaled to fit 100 × 100, as the
    /// format requires. imgproxy answers them in hex; apps usually pass them in base64.
    public func thumbHash() throws(ImageError) -> [UInt8] {
        guard width > 100 || height > 100 else { return thumbHashOfSmall() }
        let scale = 100 / Double(max(width, height))
        return try resized(
            to: PixelSize(
                width: max(1, Int((Double(width) * scale).rounded())),
                height: max(1, Int((Double(height) * scale).rounded())))
        ).thumbHashOfSmall()
    }

    private func thumbHashOfSmall() -> [UInt8] {
        let count = width * height
        var rgba = [Double](repeating: 0, count: count * 4)
        withUnsafeBytes { pixels in
            for y in 0..<height {
                for x in 0..<width {
                    for c in 0..<4 { rgba[(y * width + x) * 4 + c] = Double(pixels[y * bytesPerRow + x * 4 + c]) }
                }
            }
        }
        var average = (r: 0.0, g: 0.0, b: 0.0, a: 0.0)
        for index in 0..<count {
            let alpha = rgba[index * 4 + 3] / 255
            average.r += alpha / 255 * rgba[index * 4]
            average.g += alpha / 255 * rgba[index * 4 + 1]
            average.b += alpha / 255 * rgba[index * 4 + 2]
            average.a += alpha
        }
        if average.a > 0 {
            average.r /= average.a
            average.g /= average.a
            average.b /= average.a
        }
        let hasAlpha = average.a < Double(count)
        let lLimit: Double = hasAlpha ? 5 : 7
        let longest = Double(max(width, height))
        let lx = max(1, Int((lLimit * Double(width) / longest).rounded())),
            ly = max(1, Int((lLimit * Double(height) / longest).rounded()))
        var l = [Double](repeating: 0, count: count), p = l, q = l, a = l
        for index in 0..<count {
            let alpha = rgba[index * 4 + 3] / 255
            let r = average.r * (1 - alpha) + alpha / 255 * rgba[index * 4]
            let g = average.g * (1 - alpha) + alpha / 255 * rgba[index * 4 + 1]
            let b = average.b * (1 - alpha) + alpha / 255 * rgba[index * 4 + 2]
            l[index] = (r + g + b) / 3
            p[index] = (r + g) / 2 - b
            q[index] = r - g
            a[index] = alpha
        }
        let (lDC, lAC, lScale) = thumbHashChannel(l, max(3, lx), max(3, ly))
        let (pDC, pAC, pScale) = thumbHashChannel(p, 3, 3)
        let (qDC, qAC, qScale) = thumbHashChannel(q, 3, 3)
        let (aDC, aAC, aScale) = hasAlpha ? thumbHashChannel(a, 5, 5) : (1, [], 1)
        func round(_ value: Double) -> Int { Int((value).rounded()) }
        let isLandscape = width > height
        let header24 =
            round(63 * lDC) | round(31.5 + 31.5 * pDC) << 6 | round(31.5 + 31.5 * qDC) << 12 | round(31 * lScale) << 18
            | (hasAlpha ? 1 << 23 : 0)
        let header16 =
            (isLandscape ? ly : lx) | round(63 * pScale) << 3 | round(63 * qScale) << 9 | (isLandscape ? 1 << 15 : 0)
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8(header24 >> 16), UInt8(header16 & 255),
            UInt8(header16 >> 8),
        ]
        if hasAlpha { hash.append(UInt8(round(15 * aDC) | round(15 * aScale) << 4)) }
        var acIndex = 0
        let start = hash.count
        for ac in hasAlpha ? [lAC, pAC, qAC, aAC] : [lAC, pAC, qAC] {
            for factor in ac {
                let slot = start + (acIndex >> 1)
                if slot == hash.count { hash.append(0) }
                hash[slot] |= UInt8(round(15 * factor) << ((acIndex & 1) << 2))
                acIndex += 1
            }
        }
        return hash
    }

    /// One channel's DC, its AC terms mapped to 0…1, and their scale (ThumbHash's triangle of
    /// `nx` × `ny` cosine terms).
    private func thumbHashChannel(_ channel: [Double], _ nx: Int, _ ny: Int) -> (Double, [Double], Double) {
        var dc = 0.0, scale = 0.0
        var ac: [Double] = []
        // Spelled as the reference spells it, so that the hashes agree to the bit.
        var xs = [Double](repeating: 0, count: nx * width), ys = [Double](repeating: 0, count: ny * height)
        for k in 0..<nx {
            for x in 0..<width { xs[k * width + x] = cos(Double.pi / Double(width) * Double(k) * (Double(x) + 0.5)) }
        }
        for k in 0..<ny {
            for y in 0..<height { ys[k * height + y] = cos(Double.pi / Double(height) * Double(k) * (Double(y) + 0.5)) }
        }
        for cy in 0..<ny {
            var cx = 0
            while cx * ny < nx * (ny - cy) {
                var f = 0.0
                for y in 0..<height {
                    let fy = ys[cy * height + y]
                    for x in 0..<width { f += channel[x + y * width] * xs[cx * width + x] * fy }
                }
                f /= Double(width * height)
                if cx > 0 || cy > 0 {
                    ac.append(f)
                    scale = max(scale, abs(f))
                } else {
                    dc = f
                }
                cx += 1
            }
        }
        if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        return (dc, ac, scale)
    }

    // MARK: Colours

    /// The mean of the pixels' colours (and alpha); with `ignoringTransparent`, of the pixels that
    /// are not fully transparent (imgproxy's default). A fully transparent image averages to clear.
    public func averageColor(ignoringTransparent: Bool = true) -> RGBAColor {
        var sums = (r: 0, g: 0, b: 0, a: 0), counted = 0
        withUnsafeBytes { pixels in
            for y in 0..<height {
                for x in 0..<width {
                    let offset = y * bytesPerRow + x * 4
                    if ignoringTransparent && pixels[offset + 3] == 0 { continue }
                    sums.r += Int(pixels[offset])
                    sums.g += Int(pixels[offset + 1])
                    sums.b += Int(pixels[offset + 2])
                    sums.a += Int(pixels[offset + 3])
                    counted += 1
                }
            }
        }
        guard counted > 0 else { return .clear }
        func mean(_ sum: Int) -> UInt8 { UInt8((Double(sum) / Double(counted)).rounded()) }
        return RGBAColor(red: mean(sums.r), green: mean(sums.g), blue: mean(sums.b), alpha: mean(sums.a))
    }

    /// At most `maxColors` (2…256) colours that stand for the image, most used first: median cut
    /// on the pixels that are not fully transparent, each box's mean colour (and alpha).
    /// - Throws: ``ImageError/Code/invalidArgument`` outside 2…256.
    public func palette(maxColors: Int) throws(ImageError) -> [RGBAColor] {
        guard (2...256).contains(maxColors) else {
            throw ImageError(.invalidArgument, "a palette has 2...256 colours, not \(maxColors)")
        }
        return swatches(maxColors: maxColors).map(\.color)
    }

    /// The median cut's boxes: each one's mean colour and how many pixels it holds, most first.
    func swatches(maxColors: Int) -> [(color: RGBAColor, population: Int)] {
        var pixels: [SIMD4<UInt8>] = []
        pixels.reserveCapacity(width * height)
        withUnsafeBytes { bytes in
            for y in 0..<height {
                for x in 0..<width {
                    let offset = y * bytesPerRow + x * 4
                    guard bytes[offset + 3] != 0 else { continue }
                    pixels.append(SIMD4(bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3]))
                }
            }
        }
        guard !pixels.isEmpty else { return [] }
        var boxes = [pixels[...]]
        while boxes.count < maxColors {
            // Split the box with the widest channel range (by pixel count when equal).
            var best = -1, bestRange = 0, bestChannel = 0
            for (index, box) in boxes.enumerated() where box.count > 1 {
                var low = SIMD4<UInt8>(repeating: 255), high = SIMD4<UInt8>(repeating: 0)
                for pixel in box {
                    low = pointwiseMin(low, pixel)
                    high = pointwiseMax(high, pixel)
                }
                for channel in 0..<3 where Int(high[channel]) - Int(low[channel]) > bestRange {
                    (best, bestRange, bestChannel) = (index, Int(high[channel]) - Int(low[channel]), channel)
                }
            }
            guard best >= 0 else { break }  // every box is one colour
            var box = Array(boxes[best])
            box.sort { $0[bestChannel] < $1[bestChannel] }
            // At the median, moved to the nearest change of value: one colour never straddles two boxes.
            var middle = box.count / 2
            var below = middle, above = middle
            while below > 0 && box[below - 1][bestChannel] == box[below][bestChannel] { below -= 1 }
            while above < box.count && box[above - 1][bestChannel] == box[above][bestChannel] { above += 1 }
            middle = below > 0 && (above == box.count || middle - below <= above - middle) ? below : above
            boxes[best] = box[..<middle]
            boxes.append(box[middle...])
        }
        return boxes.sorted { $0.count > $1.count }.map { box in
            var sum = SIMD4<Int>(repeating: 0)
            for pixel in box { sum &+= SIMD4<Int>(truncatingIfNeeded: pixel) }
            let mean = (SIMD4<Double>(sum) / Double(box.count)).rounded(.toNearestOrAwayFromZero)
            let color = RGBAColor(
                red: UInt8(mean[0]), green: UInt8(mean[1]), blue: UInt8(mean[2]), alpha: UInt8(mean[3]))
            return (color, box.count)
        }
    }

    // MARK: Perceptual hash

    /// A 64-bit perceptual hash (pHash, as PyPI's ImageHash computes `phash`): the luminance at
    /// 32 × 32, its 2-D DCT, the 8 × 8 lowest frequencies each compared with their median, the
    /// first row's bits first. Near-identical pictures (recompressed, resized, slightly recoloured)
    /// are a few bits apart; compare with the Hamming distance, `(a ^ b).nonzeroBitCount`.
    public func perceptualHash() throws(ImageError) -> UInt64 {
        let small = width == 32 && height == 32 ? self : try resized(to: PixelSize(width: 32, height: 32))
        var luma = [Double](repeating: 0, count: 32 * 32)
        small.withUnsafeBytes { pixels in
            for y in 0..<32 {
                for x in 0..<32 {
                    let offset = y * small.bytesPerRow + x * 4
                    // ITU-R 601-2 luma, Pillow's "L" conversion.
                    luma[y * 32 + x] =
                        (Double(pixels[offset]) * 299 + Double(pixels[offset + 1]) * 587 + Double(pixels[offset + 2])
                            * 114) / 1000
                }
            }
        }
        // DCT-II (unnormalised, as scipy's default) of the columns, then of the rows, low 8 only.
        let basis = Self.cosines(count: 8, over: 32, offset: 0.5)
        var columns = [Double](repeating: 0, count: 8 * 32)
        for u in 0..<8 {
            for x in 0..<32 {
                var sum = 0.0
                for y in 0..<32 { sum += luma[y * 32 + x] * basis[u * 32 + y] }
                columns[u * 32 + x] = 2 * sum
            }
        }
        var low = [Double](repeating: 0, count: 64)
        for u in 0..<8 {
            for v in 0..<8 {
                var sum = 0.0
                for x in 0..<32 { sum += columns[u * 32 + x] * basis[v * 32 + x] }
                low[u * 8 + v] = 2 * sum
            }
        }
        let sorted = low.sorted()
        let median = (sorted[31] + sorted[32]) / 2
        var hash: UInt64 = 0
        for (index, value) in low.enumerated() where value > median { hash |= 1 << UInt64(63 - index) }
        return hash
    }
}
