/// The drawing surface animated decoders composite frames on: a transparent canvas of the
/// animation's size, with the disposal operations GIF and APNG share.
struct AnimationCanvas: ~Copyable {
    var pixels: PixelBuffer
    let width: Int
    let height: Int

    init(width: Int, height: Int) throws(ImageError) {
        pixels = try PixelBuffer(width: width, height: height)
        pixels.clear()
        self.width = width
        self.height = height
    }

    /// A clipped rectangle: x, y, width, height, all within the canvas.
    struct Rect: Equatable {
        var x: Int, y: Int, width: Int, height: Int
        var isEmpty: Bool { width <= 0 || height <= 0 }
    }

    func clip(x: Int, y: Int, width: Int, height: Int) -> Rect {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(self.width, x + width), y1 = min(self.height, y + height)
        return Rect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }

    /// Sets `rect` to transparent black.
    mutating func clear(_ rect: Rect) {
        guard !rect.isEmpty else { return }
        for y in rect.y..<rect.y + rect.height {
            (pixels.row(y) + rect.x * 4).initialize(repeating: 0, count: rect.width * 4)
        }
    }

    /// A copy of the canvas as a frame (played frames and saved canvases are made and dropped at
    /// a high rate: ``PixelMemory`` reuses their memory).
    func snapshot(isOpaque: Bool) throws(ImageError) -> Bitmap {
        let copy = try PixelBuffer(width: width, height: height)
        copy.baseAddress.copyMemory(from: pixels.baseAddress, byteCount: pixels.byteCount)
        return copy.freeze(isOpaque: isOpaque)
    }

    /// The canvas as a frame of `size`: a copy, or a resampled version read straight from the
    /// canvas (no full-size copy).
    func frame(size: PixelSize) throws(ImageError) -> Bitmap {
        guard size.width != width || size.height != height else { return try snapshot(isOpaque: false) }
        let resampler = try Resampler(source: PixelSize(width: width, height: height), target: size, isOpaque: false)
        for y in 0..<height { resampler.push(row: pixels.row(y)) }
        return resampler.finish()
    }

    /// Ends drawing and hands the canvas itself over as the last frame, without a copy.
    consuming func finish(isOpaque: Bool) -> Bitmap {
        pixels.freeze(isOpaque: isOpaque)
    }

    /// Restores `rect` from `saved`, a snapshot taken earlier.
    mutating func restore(_ rect: Rect, from saved: Bitmap) {
        guard !rect.isEmpty else { return }
        for y in rect.y..<rect.y + rect.height {
            (pixels.row(y) + rect.x * 4).update(
                from: (saved.baseAddress + y * saved.bytesPerRow + rect.x * 4).assumingMemoryBound(to: UInt8.self),
                count: rect.width * 4)
        }
    }

    /// Draws `source` (a frame-sized RGBA bitmap) at (`x`, `y`), replacing (`blend` false) or
    /// compositing over (straight-alpha "over") what is there.
    mutating func draw(_ source: Bitmap, x: Int, y: Int, blend: Bool) {
        let rect = clip(x: x, y: y, width: source.width, height: source.height)
        guard !rect.isEmpty else { return }
        for row in 0..<rect.height {
            let destination = pixels.row(rect.y + row) + rect.x * 4
            let input = (source.baseAddress + (rect.y - y + row) * source.bytesPerRow + (rect.x - x) * 4)
                .assumingMemoryBound(to: UInt8.self)
            if !blend || source.isOpaque {
                destination.update(from: input, count: rect.width * 4)
                continue
            }
            for index in 0..<rect.width {
                let s = input + index * 4, d = destination + index * 4
                let sa = UInt32(s[3])
                if sa == 255 {
                    d.update(from: s, count: 4)
                } else if sa != 0 {
                    let da = UInt32(d[3]) * (255 - sa) / 255
                    let outA = sa + da
                    for channel in 0..<3 {
                        d[channel] = UInt8((UInt32(s[channel]) * sa + UInt32(d[channel]) * da + outA / 2) / outA)
                    }
                    d[3] = UInt8(outA)
                }
            }
        }
    }
}
