import ImageKit

/// thumbor's `trim`: the whole image is decoded, the border of the reference corner's colour
/// cut off, and the trimmed image stands in for the source from here on (a manual crop moves
/// with it, as thumbor moves it).
enum TrimBorders: ProcessingStep {
    static let spanName: String? = "imagekit.trim"

    static func applies(to context: ProcessingContext) -> Bool { context.operations.trim != nil }

    static func run(_ context: inout ProcessingContext) throws(ImageServiceError) {
        guard let trim = context.operations.trim else { return }
        var decoded = try context.decode(context.decoding)
        if let box = trimBox(decoded.frames[0].bitmap, trim: trim) {
            do {
                decoded = try decoded.mappingFrames { (bitmap: Bitmap) throws(ImageError) -> Bitmap in
                    try bitmap.cropped(to: box)
                }
            } catch {
                throw ImageServiceError(error)
            }
            if case .region(let left, let top, let right, let bottom)? = context.operations.crop {
                context.operations.crop = .region(
                    left: left - box.x, top: top - box.y, right: right - box.x, bottom: bottom - box.y)
            }
        }
        context.operations.trim = nil
        context.earlyDecode = decoded
        context.sourceSize = PixelSize(width: decoded.width, height: decoded.height)
    }

    /// thumbor's trim box: the pixels farther than the tolerance (Euclidean distance over RGB, or
    /// RGBA for an image with alpha) from the reference corner's colour, scanned as thumbor scans;
    /// nil when nothing would be left (thumbor then ignores the trim).
    static func trimBox(_ bitmap: Bitmap, trim: ImageOperations.Trim) -> PixelRect? {
        let width = bitmap.width, height = bitmap.height
        let channels = bitmap.isOpaque ? 3 : 4
        var reference = [UInt8](repeating: 0, count: 4)
        let (referenceX, referenceY) = trim.reference == .topLeft ? (0, 0) : (width - 1, height - 1)
        bitmap.withRow(referenceY) { row in for channel in 0..<4 { reference[channel] = row[referenceX * 4 + channel] }
        }
        let limit = trim.tolerance * trim.tolerance
        var left = width, top = height, right = 0, bottom = 0
        for y in 0..<height {
            bitmap.withRow(y) { row in
                func far(_ x: Int) -> Bool {
                    var sum = 0
                    for channel in 0..<channels {
                        let difference = Int(row[x * 4 + channel]) - Int(reference[channel])
                        sum += difference * difference
                    }
                    return Double(sum) > limit
                }
                var x = 0
                while x < width {
                    if far(x) {
                        left = min(left, x)
                        top = min(top, y)
                        bottom = y
                        break
                    }
                    x += 1
                }
                var scan = width - 1
                let stop = max(x, right)
                while scan > stop {
                    if far(scan) {
                        right = max(right, scan)
                        break
                    }
                    scan -= 1
                }
            }
        }
        guard right >= left, bottom >= top else { return nil }
        return PixelRect(x: left, y: top, width: right + 1 - left, height: bottom + 1 - top)
    }
}
