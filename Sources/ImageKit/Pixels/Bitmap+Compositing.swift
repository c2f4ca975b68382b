/// Painting, placing and flattening: what an image service builds canvases, padding and opaque
/// outputs from. Package-wide (the service's pipeline uses them), not public API.
extension PixelBuffer {
    /// Every pixel set to `color`.
    package func fill(with color: RGBAColor) {
        for y in 0..<height {
            let row = row(y)
            for x in 0..<width {
                row[x * 4] = color.red
                row[x * 4 + 1] = color.green
                row[x * 4 + 2] = color.blue
                row[x * 4 + 3] = color.alpha
            }
        }
    }

    /// `bitmap`'s pixels copied in with their top left at (`x`, `y`), clipped to the buffer.
    package func draw(_ bitmap: Bitmap, x: Int, y: Int) {
        for row in 0..<bitmap.height where y + row >= 0 && y + row < height {
            let target = self.row(y + row)
            bitmap.withRow(row) { source in
                for column in 0..<bitmap.width where x + column >= 0 && x + column < width {
                    for channel in 0..<4 { target[(x + column) * 4 + channel] = source[column * 4 + channel] }
                }
            }
        }
    }

    /// Frozen, opaque when every alpha byte is 255 (checked: the buffer's painter does not know).
    package consuming func freezeCheckingOpacity() -> Bitmap {
        var opaque = true
        for y in 0..<height where opaque {
            let row = row(y)
            for x in 0..<width where row[x * 4 + 3] != 255 {
                opaque = false
                break
            }
        }
        return freeze(isOpaque: opaque)
    }
}

extension Bitmap {
    /// The bitmap with a border of `color`: `top`, `right`, `bottom` and `left` pixels wide.
    package func padded(top: Int, right: Int, bottom: Int, left: Int, color: RGBAColor) throws(ImageError) -> Bitmap {
        let buffer = try PixelBuffer(width: width + left + right, height: height + top + bottom)
        buffer.fill(with: color)
        buffer.draw(self, x: left, y: top)
        return buffer.freezeCheckingOpacity()
    }

    /// The bitmap composited over an opaque `color`.
    package func flattened(onto color: RGBAColor) throws(ImageError) -> Bitmap {
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let target = buffer.row(y)
            withRow(y) { row in
                for x in 0..<width {
                    let alpha = Int(row[x * 4 + 3])
                    target[x * 4] = UInt8((Int(row[x * 4]) * alpha + Int(color.red) * (255 - alpha) + 127) / 255)
                    target[x * 4 + 1] = UInt8(
                        (Int(row[x * 4 + 1]) * alpha + Int(color.green) * (255 - alpha) + 127) / 255)
                    target[x * 4 + 2] = UInt8(
                        (Int(row[x * 4 + 2]) * alpha + Int(color.blue) * (255 - alpha) + 127) / 255)
                    target[x * 4 + 3] = 255
                }
            }
        }
        return buffer.freeze(isOpaque: true)
    }
}
