/// One frame of a decoded image: its pixels and how long it is shown.
public struct ImageFrame: Sendable {
    public var bitmap: Bitmap
    /// Display time in seconds; 0 for still images.
    public var duration: Double

    public init(bitmap: Bitmap, duration: Double = 0) {
        self.bitmap = bitmap
        self.duration = duration
    }
}
