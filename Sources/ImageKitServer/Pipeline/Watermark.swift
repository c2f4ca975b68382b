import Foundation
import ImageKit

/// thumbor's `watermark(url,x,y,alpha[,w_ratio,h_ratio])`: another image laid over the result.
///
/// `x` and `y` are pixels from the left/top, or from the right/bottom when negative, `Np` for N %
/// of the image's size, `center`, or `repeat` (tiled, spread evenly across the image); `alpha`
/// is the watermark's transparency (0 opaque … 100 invisible); `w_ratio`/`h_ratio` fit the
/// watermark into that percentage of the image's width/height (`none` for either).
enum Watermark {
    typealias Position = ImageOperations.WatermarkPosition

    /// `position` along an image side of `length` pixels: a percentage becomes pixels (halves
    /// round up, as thumbor); the others are as they are.
    static func position(_ position: Position, length: Int) -> Position {
        switch position {
        case .center, .repeated, .pixels: return position
        case .percent(let percent):
            let pixels = Int((Double(length) * Double(abs(percent)) / 100 + 1e-5).rounded(.toNearestOrAwayFromZero))
            return .pixels(percent < 0 ? -pixels : pixels)
        }
    }

    /// The watermark's size when fitted into `widthRatio`/`heightRatio` percent of the image.
    static func fittedSize(
        image: (width: Int, height: Int), mark: (width: Int, height: Int), widthRatio: Double?,
        heightRatio: Double?
    ) -> (width: Int, height: Int) {
        let markWidth = Double(mark.width), markHeight = Double(mark.height)
        var maxWidth = widthRatio.map { Double(image.width) * $0 / 100 }
        var maxHeight = heightRatio.map { Double(image.height) * $0 / 100 }
        if maxWidth == nil || maxWidth == 0, let height = maxHeight { maxWidth = markWidth * height / markHeight }
        if maxHeight == nil || maxHeight == 0, let width = maxWidth { maxHeight = markHeight * width / markWidth }
        guard let boxWidth = maxWidth, let boxHeight = maxHeight, boxWidth > 0, boxHeight > 0 else { return mark }
        func round(_ value: Double) -> Int { max(1, Int(value.rounded(.toNearestOrAwayFromZero))) }
        if markWidth / boxWidth >= markHeight / boxHeight {
            return (round(boxWidth), round(markHeight * boxWidth / markWidth))
        }
        return (round(markWidth * boxHeight / markHeight), round(boxHeight))
    }

    /// Where copies of a `mark`-long watermark start along a side of `length` pixels.
    static func offsets(_ position: Position, length: Int, mark: Int, limitTiles: Bool) -> [Int] {
        switch position {
        case .percent:
            return offsets(self.position(position, length: length), length: length, mark: mark, limitTiles: limitTiles)
        case .center: return [(length - mark) / 2]
        case .pixels(let value): return [value < 0 ? length - mark + value : value]
        case .repeated:
            // As many whole copies as fit, the space left spread between them; an image less
            // than twice the mark gets copies that overlap its edge, 10 px apart.
            var count = length / mark, spare = length % mark
            if Double(length) / Double(mark) < 2 {
                count = Int((Double(length) / Double(mark)).rounded(.up))
                spare = 10
            }
            if limitTiles, count > 6 {
                count = 6
                spare = length - 6 * mark
            }
            let gap = spare / (max(count, 2) - 1)
            return (0..<max(count, 1)).map { $0 * (gap + mark) }
        }
    }

    /// `bitmap` with the watermark (`mark`, decoded once for every frame) laid over it.
    static func apply(
        _ bitmap: Bitmap, mark: Bitmap, x: Position, y: Position, alpha: Int, widthRatio: Double?, heightRatio: Double?
    ) throws(ImageError) -> Bitmap {
        let xPosition = position(x, length: bitmap.width), yPosition = position(y, length: bitmap.height)
        var mark = mark
        if widthRatio != nil || heightRatio != nil {
            let size = fittedSize(
                image: (bitmap.width, bitmap.height), mark: (mark.width, mark.height), widthRatio: widthRatio,
                heightRatio: heightRatio)
            mark = try mark.resized(to: PixelSize(width: size.width, height: size.height))
        }
        // More than 100 tiles both ways: at most 6 × 6, as thumbor.
        let tiles =
            xPosition == .repeated && yPosition == .repeated
            && (bitmap.width / mark.width) * (bitmap.height / mark.height) > 100
        let lefts = offsets(xPosition, length: bitmap.width, mark: mark.width, limitTiles: tiles)
        let tops = offsets(yPosition, length: bitmap.height, mark: mark.height, limitTiles: tiles)
        let opacity = Float(100 - alpha) / 100
        let buffer = try PixelBuffer(width: bitmap.width, height: bitmap.height)
        for row in 0..<bitmap.height {
            bitmap.withRow(row) { source in buffer.row(row).update(from: source.baseAddress!, count: bitmap.width * 4) }
        }
        for top in tops {
            for left in lefts {
                for markRow in max(0, -top)..<min(mark.height, bitmap.height - top) {
                    let target = buffer.row(top + markRow)
                    mark.withRow(markRow) { pixels in
                        for markColumn in max(0, -left)..<min(mark.width, bitmap.width - left) {
                            let m = markColumn * 4, t = (left + markColumn) * 4
                            let a = Float(pixels[m + 3]) / 255 * opacity
                            if a <= 0 { continue }
                            let under = Float(target[t + 3]) / 255
                            let out = a + under * (1 - a)
                            for c in 0..<3 {
                                let value =
                                    (Float(pixels[m + c]) * a + Float(target[t + c]) * under * (1 - a)) / max(out, 1e-6)
                                target[t + c] = UInt8(min(max(value, 0), 255).rounded())
                            }
                            target[t + 3] = UInt8(min(max(out * 255, 0), 255).rounded())
                        }
                    }
                }
            }
        }
        return buffer.freezeCheckingOpacity()
    }
}
