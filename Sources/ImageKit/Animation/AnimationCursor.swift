import Foundation

/// Decodes an animation one composited frame at a time, in order, and can save and restore
/// where it stands so that a seek replays only a few frames: what an ``AnimatedImageDecoding``
/// coder hands ``AnimatedImage`` (SDWebImage's `SDAnimatedImageCoder` frame access).
///
/// A cursor is used by one thread at a time (``AnimatedImage`` holds a lock around it). Frames
/// come out full size: the canvas after the frame's blending and the previous frame's disposal.
///
/// ```swift
/// final class ToyCursor: AnimationFrameCursor {
///     private(set) var nextIndex = 0
///     func decodeNext() throws(ImageError) -> Bitmap { defer { nextIndex += 1 }; return try frame(nextIndex) }
///     func skipNext() throws(ImageError) { nextIndex += 1 }       // independent frames: nothing to draw
///     func checkpoint() -> AnimationCheckpoint<Int> { AnimationCheckpoint(canvas: nil, position: nextIndex) }
///     func restore(_ checkpoint: AnimationCheckpoint<Int>) { nextIndex = checkpoint.position }
///     func rewind() { nextIndex = 0 }
/// }
/// ```
public protocol AnimationFrameCursor: AnyObject {
    /// What the cursor needs beside the canvas to go on from a checkpoint (a file offset, a
    /// frame index, a disposal still to apply).
    associatedtype Position

    /// The frame the next ``decodeNext()`` gives.
    var nextIndex: Int { get }
    /// Decodes frame ``nextIndex`` and returns the full canvas showing it (a copy the caller keeps).
    func decodeNext() throws(ImageError) -> Bitmap
    /// Draws frame ``nextIndex`` without copying it out (a frame passed over on the way to another).
    func skipNext() throws(ImageError)
    /// The state before frame ``nextIndex``.
    func checkpoint() throws(ImageError) -> AnimationCheckpoint<Position>
    /// Goes back (or forward) to a state ``checkpoint()`` returned.
    func restore(_ checkpoint: AnimationCheckpoint<Position>) throws(ImageError)
    /// Back to before frame 0.
    func rewind() throws(ImageError)
}

/// A copy of an animation's canvas (nil for a decoder whose frames do not build on each other)
/// and the decoder's position beside it.
public struct AnimationCheckpoint<Position> {
    /// The canvas before the frame at the position.
    public let canvas: Bitmap?
    /// The decoder's own state at that frame.
    public let position: Position

    /// A checkpoint of `canvas` (nil: the frames are independent) and `position`.
    public init(canvas: Bitmap?, position: Position) {
        self.canvas = canvas
        self.position = position
    }

    /// The memory the checkpoint holds.
    var bytes: Int { canvas.map { $0.bytesPerRow * $0.height } ?? 0 }
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
        guard let canvas = checkpoint.canvas else {
            throw ImageError(.internalError, "a compositing decoder's checkpoint has no canvas")
        }
        self.init(canvas: try AnimationCanvas(copying: canvas), position: checkpoint.position)
    }
}

extension AnimationCanvas {
    /// A canvas holding a copy of `bitmap` (a checkpoint's pixels).
    init(copying bitmap: Bitmap) throws(ImageError) {
        self = try AnimationCanvas(width: bitmap.width, height: bitmap.height)
        for y in 0..<bitmap.height {
            pixels.row(y).update(
                from: (bitmap.baseAddress + y * bitmap.bytesPerRow).assumingMemoryBound(to: UInt8.self),
                count: bitmap.width * 4)
        }
    }
}
