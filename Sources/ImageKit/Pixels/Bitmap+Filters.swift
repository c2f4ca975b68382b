/// The per-pixel filters an image service offers beside blur and grayscale: unsharp masking,
/// pixelation, colour mapping and channel histograms. Package-wide (the service's pipeline uses
/// them), not public API.
extension Bitmap {
    /// An unsharp mask: each pixel moved away from its Gaussian blur by `strength` times the
    /// difference (the luma's difference on every channel with `luminanceOnly`).
    package func sharpened(strength: Double, sigma: Double, luminanceOnly: Bool) throws(ImageError) -> Bitmap {
        let blurred = try blurred(sigma: sigma)
        let buffer = try PixelBuffer(width: width, height: height)
        let amount = Float(strength)
        for y in 0..<height {
            let target = buffer.row(y)
            withRow(y) { row in
                blurred.withRow(y) { soft in
                    for x in 0..<width {
                        let i = x * 4
                        if luminanceOnly {
                            let sharp = 0.299 * Float(row[i]) + 0.587 * Float(row[i + 1]) + 0.114 * Float(row[i + 2])
                            let smooth =
                                0.299 * Float(soft[i]) + 0.587 * Float(soft[i + 1]) + 0.114 * Float(soft[i + 2])
                            let delta = amount * (sharp - smooth)
                            for c in 0..<3 {
                                target[i + c] = UInt8(min(max(Float(row[i + c]) + delta, 0), 255).rounded())
                            }
                        } else {
                            for c in 0..<3 {
                                let value = Float(row[i + c]) + amount * (Float(row[i + c]) - Float(soft[i + c]))
                                target[i + c] = UInt8(min(max(value, 0), 255).rounded())
                            }
                        }
                        target[i + 3] = row[i + 3]
                    }
                }
            }
        }
        return buffer.freeze(isOpaque: isOpaque)
    }

    /// Blocks of `blockSize`² pixels, each painted its average colour (imgproxy's `pixelate`).
    package func pixelated(blockSize: Int) throws(ImageError) -> Bitmap {
        let buffer = try PixelBuffer(width: width, height: height)
        for top in stride(from: 0, to: height, by: blockSize) {
            let bottom = min(top + blockSize, height)
            for left in stride(from: 0, to: width, by: blockSize) {
                let right = min(left + blockSize, width)
                var sum = SIMD4<Int>.zero
                for y in top..<bottom {
                    withRow(y) { row in
                        for x in left..<right {
                            sum &+= SIMD4(
                                Int(row[x * 4]), Int(row[x * 4 + 1]), Int(row[x * 4 + 2]), Int(row[x * 4 + 3]))
                        }
                    }
                }
                let count = (bottom - top) * (right - left)
                let mean = SIMD4<UInt8>(
                    truncatingIfNeeded: (sum &+ SIMD4(repeating: count / 2)) / SIMD4(repeating: count))
                for y in top..<bottom {
                    let target = buffer.row(y)
                    for x in left..<right {
                        target[x * 4] = mean.x
                        target[x * 4 + 1] = mean.y
                        target[x * 4 + 2] = mean.z
                        target[x * 4 + 3] = mean.w
                    }
                }
            }
        }
        return buffer.freeze(isOpaque: isOpaque)
    }

    /// How many pixels have each value, per colour channel (red, green, blue).
    package func channelHistograms() -> [[Int]] {
        var histograms = [[Int]](repeating: [Int](repeating: 0, count: 256), count: 3)
        for y in 0..<height {
            withRow(y) { row in
                for x in 0..<width {
                    histograms[0][Int(row[x * 4])] += 1
                    histograms[1][Int(row[x * 4 + 1])] += 1
                    histograms[2][Int(row[x * 4 + 2])] += 1
                }
            }
        }
        return histograms
    }

    /// Each pixel's colour through `transform` (red, green, blue in, out), clamped to 0…255;
    /// alpha kept.
    package func mappingColors(_ transform: (Int, Int, Int) -> (Int, Int, Int)) throws(ImageError) -> Bitmap {
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let target = buffer.row(y)
            withRow(y) { row in
                for x in 0..<width {
                    let (r, g, b) = transform(Int(row[x * 4]), Int(row[x * 4 + 1]), Int(row[x * 4 + 2]))
                    target[x * 4] = UInt8(clamping: r)
                    target[x * 4 + 1] = UInt8(clamping: g)
                    target[x * 4 + 2] = UInt8(clamping: b)
                    target[x * 4 + 3] = row[x * 4 + 3]
                }
            }
        }
        return buffer.freeze(isOpaque: isOpaque)
    }
}
