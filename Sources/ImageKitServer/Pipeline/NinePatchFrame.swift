import Foundation
import ImageKit

/// thumbor's `frame(url)`: the image set inside a nine-patch picture (Android's `.9.png`).
///
/// A nine-patch carries a one-pixel border of markers: opaque black pixels along the top and
/// left edges mark the rows and columns that stretch, along the bottom and right edges the
/// content area. The image is first padded (on white) by the space the content area leaves at
/// each side, then the patch — without its border — is drawn over it at that size: fixed rows
/// and columns at their own size, stretchy ones sharing what is left in proportion, each cell
/// scaled bilinearly and blended over the image by its alpha. A picture without markers has no
/// padding and nothing that stretches: it is drawn once from the top-left corner, cells that do
/// not fit left out, as thumbor does.
enum NinePatchFrame {
    static func apply(_ image: Bitmap, patch: Bitmap, maxPixels: Int) throws(ImageError) -> Bitmap {
        guard patch.width >= 3, patch.height >= 3 else { return image }
        let width = patch.width, height = patch.height

        func isMarker(_ x: Int, _ y: Int) -> Bool {
            let pixel = patch[x, y]
            return pixel.r == 0 && pixel.g == 0 && pixel.b == 0 && pixel.a == 255
        }
        // Content area: the first and last marked pixel of the bottom row and the right column.
        let bottomMarks = (1..<(width - 1)).filter { isMarker($0, height - 1) }
        let rightMarks = (1..<(height - 1)).filter { isMarker(width - 1, $0) }
        let left = bottomMarks.first.map { $0 - 1 } ?? 0, right = bottomMarks.last.map { width - 2 - $0 } ?? 0
        let top = rightMarks.first.map { $0 - 1 } ?? 0, bottom = rightMarks.last.map { height - 2 - $0 } ?? 0

        // The image padded on white by the content area's margins — within the pixel limit: a
        // hostile picture's margins must not make the canvas a memory bomb.
        let targetWidth = image.width + left + right, targetHeight = image.height + top + bottom
        guard targetWidth.multipliedReportingOverflow(by: targetHeight).partialValue <= maxPixels,
            targetWidth <= 100_000, targetHeight <= 100_000
        else {
            throw ImageError(
                .decompressionBomb, "frame: the picture's margins make a \(targetWidth)x\(targetHeight) result")
        }
        let canvas = try PixelBuffer(width: targetWidth, height: targetHeight)
        for y in 0..<targetHeight { canvas.row(y).update(repeating: 255, count: 4 * targetWidth) }
        for y in 0..<image.height {
            let row = canvas.row(y + top) + 4 * left
            image.withRow(y) { source in row.update(from: source.baseAddress!, count: 4 * image.width) }
        }

        // Runs of rows and of columns that stretch or not, from the top and left markers.
        let columns = runs(width) { isMarker($0, 0) }, rows = runs(height) { isMarker(0, $0) }
        let columnSizes = sizes(columns, target: targetWidth), rowSizes = sizes(rows, target: targetHeight)
        var targetY = 0
        for (row, rowSize) in zip(rows, rowSizes) {
            var targetX = 0
            for (column, columnSize) in zip(columns, columnSizes) {
                paste(
                    patch, x: column.start, y: row.start, width: column.length, height: row.length, into: canvas,
                    x: targetX, y: targetY, width: columnSize, height: rowSize)
                targetX += columnSize
            }
            targetY += rowSize
        }
        return canvas.freeze(isOpaque: false)
    }

    typealias Run = (start: Int, length: Int, stretches: Bool)

    /// The runs of `count - 2` border pixels (the corners left out) that stretch or not.
    static func runs(_ count: Int, _ stretchy: (Int) -> Bool) -> [Run] {
        var result: [Run] = []
        var index = 1
        while index < count - 1 {
            let stretches = stretchy(index)
            var end = index + 1
            while end < count - 1, stretchy(end) == stretches { end += 1 }
            result.append((index, end - index, stretches))
            index = end
        }
        return result
    }

    /// Each run's size at `target`: fixed runs their own length, stretchy ones sharing the rest.
    static func sizes(_ runs: [Run], target: Int) -> [Int] {
        let stretchy = runs.filter(\.stretches).reduce(0) { $0 + $1.length }
        let room = max(0, target - (runs.reduce(0) { $0 + $1.length } - stretchy))
        return runs.map { run in
            run.stretches ? Int(Double(run.length) / Double(stretchy) * Double(room) + 0.5) : run.length
        }
    }

    /// One cell of the patch scaled (bilinear) to the target cell and blended over it; a cell
    /// that does not fit inside the target is left out.
    private static func paste(
        _ patch: Bitmap, x sourceX: Int, y sourceY: Int, width sourceWidth: Int, height sourceHeight: Int,
        into target: borrowing PixelBuffer, x targetX: Int, y targetY: Int, width: Int, height: Int
    ) {
        guard width > 0, height > 0, targetX + width <= target.width, targetY + height <= target.height else { return }
        // The first and last target pixels sample the cell's first and last: a cell drawn at its
        // own size is copied exactly (thumbor's ratio, (n - 1) / size, blends a fixed cell's last
        // column with the next cell's first).
        let ratioX = Double(sourceWidth - 1) / Double(max(1, width - 1))
        let ratioY = Double(sourceHeight - 1) / Double(max(1, height - 1))
        for y in 0..<height {
            let fy = ratioY * Double(y), y0 = sourceY + Int(fy), wy = fy - Double(Int(fy))
            let y1 = min(y0 + 1, sourceY + sourceHeight - 1)
            let row = target.row(targetY + y)
            for x in 0..<width {
                let fx = ratioX * Double(x), x0 = sourceX + Int(fx), wx = fx - Double(Int(fx))
                let x1 = min(x0 + 1, sourceX + sourceWidth - 1)
                let a = patch[x0, y0], b = patch[x1, y0], c = patch[x0, y1], d = patch[x1, y1]
                func mix(_ p: UInt8, _ q: UInt8, _ r: UInt8, _ s: UInt8) -> Double {
                    Double(p) * (1 - wx) * (1 - wy) + Double(q) * wx * (1 - wy) + Double(r) * (1 - wx) * wy
                        + Double(s) * wx * wy
                }
                let alpha = mix(a.a, b.a, c.a, d.a) / 255
                guard alpha > 0 else { continue }
                let pixel = row + 4 * (targetX + x)
                let below = Double(pixel[3]) / 255
                let out = alpha + below * (1 - alpha)
                func blend(_ source: Double, _ channel: Int) -> UInt8 {
                    let value = (source * alpha + Double(pixel[channel]) * below * (1 - alpha)) / out
                    return UInt8(max(0, min(255, value.rounded())))
                }
                pixel[0] = blend(mix(a.r, b.r, c.r, d.r), 0)
                pixel[1] = blend(mix(a.g, b.g, c.g, d.g), 1)
                pixel[2] = blend(mix(a.b, b.b, c.b, d.b), 2)
                pixel[3] = UInt8(max(0, min(255, (out * 255).rounded())))
            }
        }
    }
}
