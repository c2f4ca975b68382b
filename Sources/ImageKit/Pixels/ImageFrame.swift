/// One frame of a decoded image: its pixels and how long it is shown.
public struct ImageFrame: Sendable {
    /// The frame's pixels, composited onto the full canvas.
    public var bitmap: Bitmap
    /// Display time in seconds; 0 for still images.
    public var duration: Double

    /// A frame of `bitmap` shown for `duration` seconds (0: a still image).
    public init(bitmap: Bitmap, duration: Double = 0) {
        self.bitmap = bitmap
        self.duration = duration
    }
}
