import Foundation

/// APNG frames through the frame loop of the eager decode (``PNGCoder/drawNextFrame(_:bytes:limits:state:)``).
final class APNGAnimationCursor: AnimationFrameCursor {
    private let data: Data
    private let animation: APNGAnimation
    private let limits: DecodingLimits
    private var state: APNGRunState

    init(data: Data, animation: APNGAnimation, limits: DecodingLimits) throws(ImageError) {
        self.data = data
        self.animation = animation
        self.limits = limits
        state = try APNGRunState(animation)
    }

    var nextIndex: Int { state.position.nextIndex }

    func decodeNext() throws(ImageError) -> Bitmap {
        try skipNext()
        return try state.canvas.snapshot(isOpaque: false)
    }

    func skipNext() throws(ImageError) {
        guard state.position.nextIndex < animation.frames.count else {
            throw ImageError(.badImageData, "the APNG has no frame \(state.position.nextIndex)")
        }
        try data.withImageBytes { bytes throws(ImageError) in
            _ = try PNGCoder.drawNextFrame(animation, bytes: bytes, limits: limits, state: &state)
        }
    }

    func checkpoint() throws(ImageError) -> AnimationCheckpoint<APNGRunState.Position> { try state.checkpoint() }

    func restore(_ checkpoint: AnimationCheckpoint<APNGRunState.Position>) throws(ImageError) {
        state = try APNGRunState(restoring: checkpoint)
    }

    func rewind() throws(ImageError) { state = try APNGRunState(animation) }
}

extension PNGCoder: AnimatedImageDecoding {
    /// An APNG's canvas, frame delays and play count from its chunks; nil for a still PNG.
    public func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo? {
        guard ImageSignature(data).isAnimated else { return nil }
        return try apngAnimation(data).info
    }

    /// A cursor that composites the APNG frames in order (the eager decode's frame loop).
    public func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
        -> any AnimationFrameCursor
    {
        try APNGAnimationCursor(data: data, animation: apngAnimation(data).animation, limits: limits)
    }

    private func apngAnimation(_ data: Data) throws(ImageError) -> (animation: APNGAnimation, info: AnimationInfo) {
        guard let animation = data.withUnsafeBytes({ APNGAnimation($0) }) else {
            throw ImageError(.badImageData, "the APNG's animation chunks are inconsistent")
        }
        let durations = animation.frames.map(\.delay)
        return (
            animation,
            AnimationInfo(
                canvasSize: PixelSize(width: animation.width, height: animation.height), durations: durations,
                loopCount: durations.count > 1 ? animation.playCount : 1)
        )
    }
}
