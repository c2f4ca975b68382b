import ImageKit

/// imgproxy's `vtt` sprite sheets and `vta` animations: frames of a video taken at even steps,
/// each fitted (or filled, or extended) to the asked box, then laid out in a grid or played in
/// order. Every frame is decoded at its cell's size; the result stands for the source in the rest
/// of the pipeline.
struct VideoStillsLayout {
    let stills: ImageOperations.VideoStills
    /// The frames' times in seconds, and how many of them fall inside the video.
    let times: [Double]
    let used: Int
    /// The size each frame is decoded at, and the cell it is placed in.
    let frameSize: PixelSize
    let cellSize: PixelSize
    /// How long each frame of an animation shows, in seconds.
    let frameDuration: Double

    /// The layout of `stills` on `info`'s video, starting at `start` seconds; an animation's frames
    /// show for `frameDuration` seconds, else for its delay.
    init(
        _ stills: ImageOperations.VideoStills, info: VideoFrameSource.Info, start: Double, frameDuration: Double? = nil
    ) {
        self.stills = stills
        if case .animation(_, let delay) = stills.layout {
            self.frameDuration = frameDuration ?? Double(delay) / 1000
        } else {
            self.frameDuration = 0
        }
        let count = stills.count
        let step = stills.step > 0 ? stills.step : (info.duration > 0 ? info.duration / Double(count) : 1)
        times = (0..<count).map { start + step * Double($0) }
        used = info.duration > 0 ? max(1, times.count { $0 <= info.duration }) : count
        let source = info.displaySize
        let box = PixelSize(width: stills.width, height: stills.height)
        if stills.fill, box.width > 0, box.height > 0 {
            let scale = max(Double(box.width) / Double(source.width), Double(box.height) / Double(source.height))
            frameSize = PixelSize(
                width: max(box.width, Int((Double(source.width) * scale).rounded(.up))),
                height: max(box.height, Int((Double(source.height) * scale).rounded(.up))))
            cellSize = box
        } else {
            frameSize = Self.fitted(source, in: box)
            cellSize =
                stills.extend && box.width > 0 && box.height > 0
                ? PixelSize(width: max(box.width, frameSize.width), height: max(box.height, frameSize.height))
                : frameSize
        }
    }

    /// `size` scaled to fit `box` (a side of 0 follows the ratio; enlarged when the box is larger).
    static func fitted(_ size: PixelSize, in box: PixelSize) -> PixelSize {
        let width = Double(size.width), height = Double(size.height)
        let scale: Double
        switch (box.width, box.height) {
        case (0, 0): return size
        case (0, let boxHeight): scale = Double(boxHeight) / height
        case (let boxWidth, 0): scale = Double(boxWidth) / width
        case (let boxWidth, let boxHeight): scale = min(Double(boxWidth) / width, Double(boxHeight) / height)
        }
        return PixelSize(width: max(1, Int((width * scale).rounded())), height: max(1, Int((height * scale).rounded())))
    }

    /// The frames the layout shows: those inside the video with `trim`, else all (a time past the
    /// end gives the last frame).
    var frameTimes: [Double] { stills.trim ? Array(times.prefix(used)) : times }

    /// A sprite sheet (one picture), not an animation.
    var isSprite: Bool {
        if case .sprite = stills.layout { return true }
        return false
    }

    /// The sprite's columns and rows: trimmed to the frames used with `trim`.
    var grid: (columns: Int, rows: Int) {
        guard case .sprite(let columns, let rows) = stills.layout else { return (1, 1) }
        guard stills.trim else { return (columns, rows) }
        return (min(columns, used), (used + columns - 1) / columns)
    }

    /// The picture's size: the grid of cells, or one cell for an animation.
    var outputSize: PixelSize {
        let (columns, rows) = grid
        return PixelSize(width: cellSize.width * columns, height: cellSize.height * rows)
    }

    /// One frame decoded at ``frameSize`` and placed in its cell: cropped around the focus with
    /// `fill`, centred on black with `extend`.
    func cell(_ video: VideoFrameSource, at time: Double, mode: VideoFrameSource.SeekMode) throws(ImageError) -> Bitmap
    {
        var frame = try video.frame(at: time, mode: mode, fitting: frameSize).bitmap
        if frame.width != frameSize.width || frame.height != frameSize.height {
            frame = try frame.resized(to: frameSize)  // an enlargement: the decode never enlarges
        }
        if stills.fill, frame.width > cellSize.width || frame.height > cellSize.height {
            let x = Int((Double(frame.width) * stills.focusX - Double(cellSize.width) / 2).rounded())
            let y = Int((Double(frame.height) * stills.focusY - Double(cellSize.height) / 2).rounded())
            frame = try frame.cropped(
                to: PixelRect(
                    x: min(max(0, x), frame.width - cellSize.width), y: min(max(0, y), frame.height - cellSize.height),
                    width: cellSize.width, height: cellSize.height))
        }
        guard frame.width != cellSize.width || frame.height != cellSize.height else { return frame }
        let canvas = try PixelBuffer(width: cellSize.width, height: cellSize.height)
        canvas.fill(with: RGBAColor(red: 0, green: 0, blue: 0, alpha: 255))
        canvas.draw(frame, x: (cellSize.width - frame.width) / 2, y: (cellSize.height - frame.height) / 2)
        return canvas.freeze(isOpaque: true)
    }

    /// The sprite sheet or the animation; past `deadline` (checked before each frame) it stops
    /// with a `decompressionBomb` error (422): the frames are each bounded, their sum by time.
    func render(_ video: VideoFrameSource, mode: VideoFrameSource.SeekMode, deadline: ContinuousClock.Instant)
        throws(ImageError) -> DecodedImage
    {
        let times = frameTimes
        func cell(at time: Double) throws(ImageError) -> Bitmap {
            guard ContinuousClock.now < deadline else {
                throw ImageError(.decompressionBomb, "the video's frames take longer than the deadline to decode")
            }
            return try self.cell(video, at: time, mode: mode)
        }
        switch stills.layout {
        case .animation:
            var frames: [ImageFrame] = []
            for time in times {
                frames.append(ImageFrame(bitmap: try cell(at: time), duration: frameDuration))
            }
            var image = DecodedImage(frames: frames, format: .unknown)
            image.loopCount = 0
            return image
        case .sprite:
            let size = outputSize, columns = grid.columns
            let sheet = try PixelBuffer(width: size.width, height: size.height)
            sheet.fill(with: RGBAColor(red: 0, green: 0, blue: 0, alpha: 255))
            for (index, time) in times.enumerated() where index < used {
                let tile = try cell(at: time)
                sheet.draw(tile, x: (index % columns) * cellSize.width, y: (index / columns) * cellSize.height)
            }
            return DecodedImage(frames: [ImageFrame(bitmap: sheet.freeze(isOpaque: true))], format: .unknown)
        }
    }
}
