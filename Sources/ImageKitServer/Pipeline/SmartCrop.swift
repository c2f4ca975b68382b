import ImageKit

/// Where a crop of a given size shows the most interesting part of an image: thumbor's `smart/`
/// and imgproxy's `g:sm`. Like libvips' `interesting=attention`, each pixel scores for its edges
/// (a Laplacian of the luma), its saturation and skin tones, and the window with the highest sum
/// wins (ties: the one nearest the centre). It runs on the decode-time thumbnail the pipeline
/// has already decoded, sampled down to about 160 pixels on its long side, so it costs a few
/// hundred microseconds whatever the source's size.
enum SmartCrop {
    /// The best `size` window inside `bounds` of `bitmap` (both in the bitmap's pixels).
    static func window(of size: (width: Int, height: Int), within bounds: PixelRect, in bitmap: Bitmap) -> PixelRect {
        let freeX = bounds.width - size.width, freeY = bounds.height - size.height
        let centred = PixelRect(
            x: bounds.x + max(0, freeX) / 2, y: bounds.y + max(0, freeY) / 2, width: size.width, height: size.height)
        guard freeX > 0 || freeY > 0, bounds.width >= 3, bounds.height >= 3 else { return centred }
        // One sample per `step` pixels.
        let step = max(1, max(bounds.width, bounds.height) / 160)
        let columns = bounds.width / step, rows = bounds.height / step
        guard columns >= 3, rows >= 3 else { return centred }
        let score = scores(of: bitmap, within: bounds, step: step, columns: columns, rows: rows)
        // Summed-area table: any window's sum in four lookups.
        let stride = columns + 1
        var table = [Double](repeating: 0, count: stride * (rows + 1))
        for row in 0..<rows {
            var running = 0.0
            for column in 0..<columns {
                running += Double(score[row * columns + column])
                table[(row + 1) * stride + column + 1] = table[row * stride + column + 1] + running
            }
        }
        let windowColumns = min(columns, max(1, size.width / step)), windowRows = min(rows, max(1, size.height / step))
        var best = (sum: -1.0, distance: Int.max, x: 0, y: 0)
        let centreX = (columns - windowColumns) / 2, centreY = (rows - windowRows) / 2
        for top in 0...(rows - windowRows) {
            for left in 0...(columns - windowColumns) {
                let bottom = top + windowRows, right = left + windowColumns
                let sum =
                    table[bottom * stride + right] - table[top * stride + right] - table[bottom * stride + left]
                    + table[top * stride + left]
                let distance = abs(left - centreX) + abs(top - centreY)
                if sum > best.sum + 1e-6 || (abs(sum - best.sum) <= 1e-6 && distance < best.distance) {
                    best = (sum, distance, left, top)
                }
            }
        }
        let x = min(max(0, best.x * step), max(0, freeX)), y = min(max(0, best.y * step), max(0, freeY))
        return PixelRect(
            x: bounds.x + (freeX > 0 ? x : freeX / 2), y: bounds.y + (freeY > 0 ? y : freeY / 2),
            width: size.width, height: size.height)
    }

    /// Each sample's interest: saturation and skin tones, then the Laplacian of the luma.
    static func scores(of bitmap: Bitmap, within bounds: PixelRect, step: Int, columns: Int, rows: Int) -> [Float] {
        var luma = [Float](repeating: 0, count: columns * rows)
        var score = [Float](repeating: 0, count: columns * rows)
        for row in 0..<rows {
            for column in 0..<columns {
                let pixel = bitmap[bounds.x + column * step, bounds.y + row * step]
                let r = Float(pixel.r), g = Float(pixel.g), b = Float(pixel.b)
                let y = 0.299 * r + 0.587 * g + 0.114 * b
                luma[row * columns + column] = y
                let high = max(r, g, b), low = min(r, g, b)
                // Saturated colour counts where it is neither too dark nor washed out.
                var value = (y > 20 && y < 235) ? (high - low) * 0.5 : 0
                if r > 95, g > 40, b > 20, high - low > 15, r - g > 15, r > b { value += 60 }  // skin
                score[row * columns + column] = value * Float(pixel.a) / 255
            }
        }
        for row in 1..<(rows - 1) {
            for column in 1..<(columns - 1) {
                let index = row * columns + column
                let laplacian =
                    4 * luma[index] - luma[index - 1] - luma[index + 1] - luma[index - columns] - luma[index + columns]
                score[index] += abs(laplacian)
            }
        }
        return score
    }
}
