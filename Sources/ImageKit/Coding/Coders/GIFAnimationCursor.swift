internal import CGIF
import Foundation

/// GIF frames through the record loop of ``GIFDecoding``. One giflib session runs while frames
/// go in order (each run stops right after a frame and the next goes on from there); a restore
/// or rewind starts a new session at the saved record.
final class GIFAnimationCursor: AnimationFrameCursor {
    /// The animation's bytes, shared with its `AnimatedImage` (never copied): each run points the
    /// giflib session's reader at them again, since `Data` lends its bytes for one call at a time.
    private let data: Data
    private let options: ImageDecodingOptions
    private let screen: PixelSize
    private var state: GIFRunState
    private var session: (gif: UnsafeMutablePointer<GifFileType>, reader: GIFMemoryReader)?

    init(data: Data, screen: PixelSize, limits: DecodingLimits) throws(ImageError) {
        self.data = data
        self.screen = screen
        var options = ImageDecodingOptions.default
        options.limits = limits
        self.options = options
        state = try GIFRunState(screen: screen)
    }

    deinit {
        endSession()
    }

    private func endSession() {
        if let session { GIFDecoding.close(session.gif) }
        session = nil
        state.suspendedInSession = nil
    }

    var nextIndex: Int { state.position.emittedCount }

    func decodeNext() throws(ImageError) -> Bitmap { try draw(copying: true)! }

    func skipNext() throws(ImageError) { _ = try draw(copying: false) }

    private func draw(copying: Bool) throws(ImageError) -> Bitmap? {
        guard !state.position.isAtEnd else {
            throw ImageError(.badImageData, "the GIF has no frame \(state.position.emittedCount)")
        }
        var frame: Bitmap?
        var emitted = false
        do {
            try data.withImageBytes { input throws(ImageError) in
                if let session {
                    session.reader.bytes = input
                } else {
                    session = try GIFDecoding.open(input)
                }
                let run = GIFDecoding(bytes: input, options: options, completeFramesOnly: false)
                _ = try run.advance(session!.gif, reader: session!.reader, state: &state) {
                    (canvas: borrowing AnimationCanvas, _: Double) throws(ImageError) -> Bool in
                    if copying { frame = try canvas.snapshot(isOpaque: false) }
                    emitted = true
                    return false
                }
            }
        } catch {
            // The state may stand inside a frame: start over next time.
            endSession()
            state = try GIFRunState(screen: screen)
            throw error
        }
        if emitted { return frame }
        // The data ended: the frame still pending is the last one.
        endSession()
        guard state.position.pending != nil, !state.position.pendingEmitted else {
            throw ImageError(.badImageData, "the GIF has no frame \(state.position.emittedCount)")
        }
        state.position.pendingEmitted = true
        state.position.emittedCount += 1
        return copying ? try state.canvas.snapshot(isOpaque: false) : nil
    }

    func checkpoint() throws(ImageError) -> AnimationCheckpoint<GIFRunState.Position> { try state.checkpoint() }

    func restore(_ checkpoint: AnimationCheckpoint<GIFRunState.Position>) throws(ImageError) {
        endSession()
        state = try GIFRunState(restoring: checkpoint)
    }

    func rewind() throws(ImageError) {
        endSession()
        state = try GIFRunState(screen: screen)
    }
}

extension GIFCoder: AnimatedImageDecoding {
    /// Screen size, durations and loop count from a walk over the blocks (no LZW decoding).
    public func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo? {
        guard let walked = data.withUnsafeBytes({ GIFStructure.animationInfo($0) }) else {
            throw ImageError(.badImageData, "the GIF has no image")
        }
        return AnimationInfo(canvasSize: walked.screen, durations: walked.durations, loopCount: walked.loopCount)
    }

    /// A cursor that runs the GIF record loop a frame at a time on one giflib session.
    public func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
        -> any AnimationFrameCursor
    {
        try GIFAnimationCursor(data: data, screen: info.canvasSize, limits: limits)
    }
}
