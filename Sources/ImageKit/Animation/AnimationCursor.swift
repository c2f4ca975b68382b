import CGIF
import Foundation

/// Decodes an animation one composited frame at a time, and can save and restore where it
/// stands so that a seek replays only a few frames.
protocol AnimationCursor: AnyObject {
    /// The decoder's position beside the canvas.
    associatedtype Position

    /// The frame the next ``decodeNext()`` gives.
    var nextIndex: Int { get }
    /// Decodes frame ``nextIndex`` and returns the full canvas showing it (a copy).
    func decodeNext() throws(ImageError) -> Bitmap
    /// Draws frame ``nextIndex`` onto the canvas without copying it out (a frame passed over).
    func skipNext() throws(ImageError)
    /// The state before frame ``nextIndex``.
    func checkpoint() throws(ImageError) -> AnimationCheckpoint<Position>
    func restore(_ checkpoint: AnimationCheckpoint<Position>) throws(ImageError)
    /// Back to before frame 0.
    func rewind() throws(ImageError)
}

/// A copy of an animation's canvas and the decoder's position beside it.
struct AnimationCheckpoint<Position> {
    let canvas: Bitmap
    let position: Position

    var bytes: Int { canvas.bytesPerRow * canvas.height }
}

/// A decoder's state between frames: the canvas, and a copyable position.
protocol AnimationRunState: ~Copyable {
    associatedtype Position
    var canvas: AnimationCanvas { get }
    var position: Position { get }
    init(canvas: consuming AnimationCanvas, position: Position)
}

extension AnimationRunState where Self: ~Copyable {
    func checkpoint() throws(ImageError) -> AnimationCheckpoint<Position> {
        AnimationCheckpoint(canvas: try canvas.snapshot(isOpaque: false), position: position)
    }

    init(restoring checkpoint: AnimationCheckpoint<Position>) throws(ImageError) {
        self.init(canvas: try AnimationCanvas(copying: checkpoint.canvas), position: checkpoint.position)
    }
}

extension AnimationCanvas {
    /// A canvas holding a copy of `bitmap` (a checkpoint's pixels).
    init(copying bitmap: Bitmap) throws(ImageError) {
        self = try AnimationCanvas(width: bitmap.width, height: bitmap.height)
        for y in 0..<bitmap.height {
            pixels.row(y).update(from: (bitmap.baseAddress + y * bitmap.bytesPerRow).assumingMemoryBound(to: UInt8.self),
                                 count: bitmap.width * 4)
        }
    }
}

// MARK: GIF

/// GIF frames through the record loop of ``GIFDecoding``. One giflib session runs while frames
/// go in order (each run stops right after a frame and the next goes on from there); a restore
/// or rewind starts a new session at the saved record.
final class GIFAnimationCursor: AnimationCursor {
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

// MARK: APNG

final class APNGAnimationCursor: AnimationCursor {
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

// MARK: WebP

final class WebPAnimationCursor: AnimationCursor {
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
            _ = try animation.drawNextFrame(bytes, state: &state) { (canvas: borrowing AnimationCanvas) throws(ImageError) in
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
