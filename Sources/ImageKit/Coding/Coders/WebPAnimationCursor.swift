import Foundation

/// Animated WebP frames through ImageKit's compositor (``WebPAnimation/drawNextFrame(_:state:show:)``).
final class WebPAnimationCursor: AnimationFrameCursor {
    private let data: Data
    private let animation: WebPAnimation
    private var state: WebPRunState

    init(data: Data, animation: WebPAnimation) throws(ImageError) {
        self.data = data
        self.animation = animation
        state = try WebPRunState(animation)
    }

    var nextIndex: Int { state.position.nextIndex }

    func decodeNext() throws(ImageError) -> Bitmap { try draw(copying: true)! }

    func skipNext() throws(ImageError) { _ = try draw(copying: false) }

    private func draw(copying: Bool) throws(ImageError) -> Bitmap? {
        guard state.position.nextIndex < animation.frames.count else {
            throw ImageError(.badImageData, "the WebP has no frame \(state.position.nextIndex)")
        }
        var frame: Bitmap?
        try data.withImageBytes { bytes throws(ImageError) in
            _ = try animation.drawNextFrame(bytes, state: &state) {
                (canvas: borrowing AnimationCanvas) throws(ImageError) in
                if copying { frame = try canvas.snapshot(isOpaque: false) }
            }
        }
        return frame
    }

    func checkpoint() throws(ImageError) -> AnimationCheckpoint<WebPRunState.Position> { try state.checkpoint() }

    func restore(_ checkpoint: AnimationCheckpoint<WebPRunState.Position>) throws(ImageError) {
        state = try WebPRunState(restoring: checkpoint)
    }

    func rewind() throws(ImageError) { state = try WebPRunState(animation) }
}

extension WebPCoder: AnimatedImageDecoding {
    /// An animated WebP's canvas, durations and loop count from libwebp's demuxer; nil for a still.
    public func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo? {
        guard ImageSignature(data).isAnimated else { return nil }
        let animation = try data.withImageBytes { bytes throws(ImageError) in try WebPAnimation(bytes) }
        return Self.info(animation)
    }

    /// A cursor that composites the WebP frames in order (libwebp's blend and disposal).
    public func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
        -> any AnimationFrameCursor
    {
        try WebPAnimationCursor(
            data: data, animation: data.withImageBytes { bytes throws(ImageError) in try WebPAnimation(bytes) })
    }

    private static func info(_ animation: WebPAnimation) -> AnimationInfo {
        var durations = animation.frames.map(\.duration)
        if durations.count == 1 { durations = [0] }
        return AnimationInfo(
            canvasSize: PixelSize(width: animation.width, height: animation.height), durations: durations,
            loopCount: durations.count > 1 ? animation.loopCount : 1)
    }
}
