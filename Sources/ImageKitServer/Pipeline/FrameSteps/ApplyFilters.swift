import ImageKit

/// The URL's pixel filters, in the URL's order (thumbor runs none of them on a GIF it keeps).
/// Integer arithmetic follows thumbor's C filters, truncations included, so the bytes match.
enum ApplyFilters: FrameStep {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap {
        guard !context.keepsGIF else { return frame }
        var bitmap = frame
        for filter in context.operations.filters { bitmap = try applying(filter, to: bitmap, context) }
        return bitmap
    }

    static func applying(_ filter: ImageOperations.Filter, to frame: Bitmap, _ context: ProcessingContext)
        throws(ImageError) -> Bitmap
    {
        var bitmap = frame
        switch filter {
        case .blur(let radius, let sigma):
            let value = min(Bitmap.maximumBlurSigma, sigma ?? radius)
            if value > 0 { bitmap = try bitmap.blurred(sigma: value) }
        case .grayscale:
            bitmap = try bitmap.grayscaled()
        case .equalize:
            let tables = equalizingTables(bitmap)
            bitmap = try bitmap.mappingColors { (tables[0][$0], tables[1][$1], tables[2][$2]) }
        case .curve(let all, let red, let green, let blue):
            let common = splineTable(all), r = splineTable(red), g = splineTable(green),
                b = splineTable(blue)
            bitmap = try bitmap.mappingColors { (common[r[$0]], common[g[$1]], common[b[$2]]) }
        case .brightness(let amount):
            let delta = 255 * amount / 100  // C's truncating division, as thumbor's filter
            bitmap = try bitmap.mappingColors { ($0 + delta, $1 + delta, $2 + delta) }
        case .rgb(let red, let green, let blue):
            let (dr, dg, db) = (255 * red / 100, 255 * green / 100, 255 * blue / 100)
            bitmap = try bitmap.mappingColors { ($0 + dr, $1 + dg, $2 + db) }
        case .contrast(let amount):
            let factor = (amount + 100) * (amount + 100) / 100
            bitmap = try bitmap.mappingColors {
                (factor * ($0 - 128) / 100 + 128, factor * ($1 - 128) / 100 + 128, factor * ($2 - 128) / 100 + 128)
            }
        case .saturation(let change):
            bitmap = try saturated(bitmap, by: change)
        case .roundCorner(let a, _, let color, let transparent):
            bitmap = try bitmap.roundingCorners(radius: Double(a))
            if !transparent { bitmap = try bitmap.flattened(onto: color) }
        case .sharpen(let strength, let sigma, let luminanceOnly):
            if strength > 0, sigma > 0 {
                bitmap = try bitmap.sharpened(
                    strength: strength, sigma: min(Bitmap.maximumBlurSigma, sigma), luminanceOnly: luminanceOnly)
            }
        case .pixelate(let size):
            if size > 1 { bitmap = try bitmap.pixelated(blockSize: size) }
        case .noise(let amount):
            if amount > 0 { bitmap = try noised(bitmap, amount: amount) }
        case .frame(let url):
            guard let patch = context.overlays[url] else {
                throw ImageError(.invalidArgument, "the frame's picture was not given")
            }
            bitmap = try NinePatchFrame.apply(bitmap, patch: patch, maxPixels: context.processor.maxPixels)
        case .watermark(let url, let x, let y, let alpha, let widthRatio, let heightRatio):
            guard let mark = context.overlays[url] else {
                throw ImageError(.invalidArgument, "the watermark's image was not given")
            }
            bitmap = try Watermark.apply(
                bitmap, mark: mark, x: x, y: y, alpha: alpha, widthRatio: widthRatio, heightRatio: heightRatio)
        }
        return bitmap
    }

    /// thumbor's saturation: the perceived brightness p, each channel moved from p by `change`
    /// (floats, truncated).
    static func saturated(_ bitmap: Bitmap, by change: Double) throws(ImageError) -> Bitmap {
        let amount = Float(change)
        return try bitmap.mappingColors { red, green, blue in
            let (r, g, b) = (Float(red), Float(green), Float(blue))
            let p = (r * r * 0.299 + g * g * 0.587 + b * b * 0.114).squareRoot()
            return (Int(p + (r - p) * amount), Int(p + (g - p) * amount), Int(p + (b - p) * amount))
        }
    }

    /// thumbor's noise: each channel moved by a random amount in ±`amount`; the generator is
    /// seeded with the image's size so one URL always gives the same bytes.
    static func noised(_ bitmap: Bitmap, amount: Int) throws(ImageError) -> Bitmap {
        var state = UInt64(bitmap.width) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(bitmap.height) &+ 0xD1B5_4A32_D192_ED03
        func next() -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(2 * amount + 1)) - amount
        }
        return try bitmap.mappingColors { ($0 + next(), $1 + next(), $2 + next()) }
    }

    /// Per channel, each value's place in the cumulative histogram stretched to 0…255 (the
    /// darkest value present becomes 0, the brightest 255); a channel of one value stays.
    static func equalizingTables(_ bitmap: Bitmap) -> [[Int]] {
        let histograms = bitmap.channelHistograms()
        return histograms.map { histogram in
            var cumulative = [Int](repeating: 0, count: 256)
            var total = 0
            for value in 0..<256 {
                total += histogram[value]
                cumulative[value] = total
            }
            let lowest = cumulative.first { $0 > 0 } ?? 0
            guard total > lowest else { return Array(0..<256) }
            return cumulative.map { max(0, Int((Double($0 - lowest) * 255 / Double(total - lowest)).rounded())) }
        }
    }

    /// A 256-entry table through control points `[x0, y0, x1, y1, …]` (x rising): a natural
    /// cubic spline between them, the first y before the first x, the last y from the last x.
    static func splineTable(_ points: [Int]) -> [Int] {
        let xs = stride(from: 0, to: points.count, by: 2).map { Double(points[$0]) }
        let ys = stride(from: 1, to: points.count, by: 2).map { Double(points[$0]) }
        let n = xs.count
        var table = [Int](repeating: Int(ys[0]), count: 256)
        guard n > 1 else { return table }
        // Second derivatives of the natural spline (zero at both ends), by the tridiagonal sweep.
        var second = [Double](repeating: 0, count: n), upper = [Double](repeating: 0, count: n)
        for i in 1..<(n - 1) {
            let left = xs[i] - xs[i - 1], right = xs[i + 1] - xs[i]
            let slope = (ys[i + 1] - ys[i]) / right - (ys[i] - ys[i - 1]) / left
            let pivot = 2 * (left + right) - left * upper[i - 1]
            upper[i] = right / pivot
            second[i] = (6 * slope - left * second[i - 1]) / pivot
        }
        second[n - 1] = 0
        if n > 2 {
            for i in stride(from: n - 2, through: 1, by: -1) { second[i] -= upper[i] * second[i + 1] }
        }
        for i in 0..<(n - 1) {
            let h = xs[i + 1] - xs[i]
            for x in Int(xs[i])..<Int(xs[i + 1]) {
                let b = (Double(x) - xs[i]) / h, a = 1 - b
                let y =
                    a * ys[i] + b * ys[i + 1] + h * h / 6
                    * ((a * a * a - a) * second[i] + (b * b * b - b) * second[i + 1])
                table[x] = min(255, max(0, Int(y.rounded())))
            }
        }
        for x in Int(xs[n - 1])..<256 { table[x] = Int(ys[n - 1]) }
        return table
    }
}
