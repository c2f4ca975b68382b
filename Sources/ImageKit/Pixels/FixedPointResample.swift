internal import CImageCodecs

/// Resizing a bitmap that is wholly in memory with integer arithmetic (`ik_resample_rgba`):
/// the ``Resampler``'s box step and Lanczos-3 weights, the weights as 14-bit integers (each
/// pixel's summing to exactly 2¹⁴, so flat areas stay flat), two taps per `pmaddwd`, an 8-bit
/// intermediate as in Pillow. Premultiplied alpha for images that are not opaque.
enum FixedPointResample {
    static let precision = 14

    /// `region` of `bitmap` scaled to `size`, or nil when the box step would average more than
    /// 257 rows (16-bit column sums): the caller then streams through the ``Resampler``.
    /// - Parameter extent: the picture's true size in source pixels when it is fractional (a
    ///   DCT-scaled JPEG), as the ``Resampler`` takes it.
    static func resize(
        _ bitmap: Bitmap, region: PixelRect, to size: PixelSize, extent: (width: Double, height: Double)? = nil,
        reducingGap: Double
    ) throws(ImageError) -> Bitmap? {
        let source = PixelSize(width: region.width, height: region.height)
        let (boxX, boxY) = Resampler.boxFactors(source: source, target: size, reducingGap: reducingGap)
        guard boxY <= 257 else { return nil }
        let reducedWidth = (source.width + boxX - 1) / boxX, reducedHeight = (source.height + boxY - 1) / boxY
        let extentWidth = extent?.width ?? Double(source.width), extentHeight = extent?.height ?? Double(source.height)
        let horizontal = Weights.cached(
            inSize: extentWidth / Double(boxX), outSize: size.width, available: reducedWidth)
        let vertical = Weights.cached(
            inSize: extentHeight / Double(boxY), outSize: size.height, available: reducedHeight)
        let output = try PixelBuffer(width: size.width, height: size.height)
        let origin = bitmap.baseAddress + region.y * bitmap.bytesPerRow + region.x * 4
        let status = horizontal.withPointers { hStarts, hCounts, hWeights in
            vertical.withPointers { vStarts, vCounts, vWeights in
                ik_resample_rgba(
                    origin.assumingMemoryBound(to: UInt8.self), bitmap.bytesPerRow,
                    CInt(source.width), CInt(source.height), CInt(boxX), CInt(boxY),
                    output.baseAddress.assumingMemoryBound(to: UInt8.self), output.bytesPerRow,
                    CInt(size.width), CInt(size.height),
                    hStarts, hCounts, hWeights, CInt(horizontal.stride),
                    vStarts, vCounts, vWeights, CInt(vertical.stride), bitmap.isOpaque ? 0 : 1)
            }
        }
        guard status == IK_OK else { throw ImageError(.internalError, "out of memory for resampling rows") }
        return output.freeze(isOpaque: bitmap.isOpaque)
    }

    /// A filter's taps with integer weights.
    struct Weights: Sendable {
        var starts: [Int32]
        var counts: [Int32]
        var weights: [Int16]
        var stride: Int

        init(_ coefficients: Resampler.Coefficients) {
            let one = 1 << FixedPointResample.precision
            stride = coefficients.stride
            starts = coefficients.start.map { Int32($0) }
            counts = coefficients.count.map { Int32($0) }
            weights = [Int16](repeating: 0, count: coefficients.weights.count)
            for index in coefficients.start.indices {
                let base = index * stride, taps = coefficients.count[index]
                guard taps > 0 else { continue }
                var total = 0, largest = base
                for tap in base..<base + taps {
                    let value = Int((coefficients.weights[tap] * Float(one)).rounded())
                    weights[tap] = Int16(clamping: value)
                    total += Int(weights[tap])
                    if coefficients.weights[tap] > coefficients.weights[largest] { largest = tap }
                }
                // Rounding error goes to the centre tap: a flat row stays exactly flat.
                weights[largest] = Int16(clamping: Int(weights[largest]) + one - total)
            }
        }

        /// The weights for one axis, computed once per (size in, size out): a service resizing
        /// one camera's photos to a few sizes asks for the same few tables again and again, and
        /// each costs about 1 % of a 256 px thumbnail (a sine and cosine per pixel, a division
        /// per tap). The most recently made tables are kept (``cacheLimit``), small ones only.
        static func cached(inSize: Double, outSize: Int, available: Int) -> Weights {
            let key = TableKey(inSize: inSize.bitPattern, outSize: outSize, available: available)
            if let weights = cache.withLock({ $0.tables[key] }) { return weights }
            let weights = Weights(Resampler.Coefficients(inSize: inSize, outSize: outSize, available: available))
            guard outSize <= 4096 else { return weights }
            cache.withLock { cache in
                guard cache.tables.updateValue(weights, forKey: key) == nil else { return }
                cache.order.append(key)
                if cache.order.count > cacheLimit { cache.tables[cache.order.removeFirst()] = nil }
            }
            return weights
        }

        static let cacheLimit = 64
        static var cachedCount: Int { cache.withLock { $0.tables.count } }
        private struct TableKey: Hashable {
            var inSize: UInt64
            var outSize: Int
            var available: Int
        }
        private static let cache = Locked<(tables: [TableKey: Weights], order: [TableKey])>(([:], []))

        func withPointers<R>(_ body: (UnsafePointer<Int32>, UnsafePointer<Int32>, UnsafePointer<Int16>) -> R) -> R {
            starts.withUnsafeBufferPointer { starts in
                counts.withUnsafeBufferPointer { counts in
                    weights.withUnsafeBufferPointer { weights in
                        body(starts.baseAddress!, counts.baseAddress!, weights.baseAddress!)
                    }
                }
            }
        }
    }
}
