internal import CGIF
internal import CImageCodecs
import Foundation

/// Where a GIF decode stands between frames: enough to resume it in a new giflib session.
struct GIFRunState: AnimationRunState, ~Copyable {
    static let noControl = GraphicsControlBlock(
        DisposalMode: 0, UserInputFlag: false, DelayTime: 0, TransparentColor: -1)

    /// Everything but the canvas: what a checkpoint keeps beside a copy of it.
    struct Position {
        /// Where the next record starts; nil: right after the header (a fresh decode).
        var offset: Int?
        /// The last frame drawn: its duration, disposal, clipped rectangle and
        /// (dispose-to-previous) the canvas before it.
        var pending: (duration: Double, disposal: Int32, rect: AnimationCanvas.Rect, saved: Bitmap?)?
        /// Whether `pending` was handed over already (its disposal is still to come).
        var pendingEmitted = false
        /// `pending` covered the whole canvas with no transparent index: the canvas is opaque
        /// until its disposal (a still from a GIF then skips the resampler's alpha work).
        var pendingIsOpaque = false
        var emittedCount = 0
        /// The graphic control extension read for the next frame.
        var control = GIFRunState.noControl
        var loopCount: Int?
        /// The data has no more frames; `pending` is the last one.
        var isAtEnd = false
    }

    var canvas: AnimationCanvas
    var position = Position()
    /// Set when a run stopped right after reading a descriptor: the same giflib session goes on
    /// from there (a new session starts at `position.offset` instead and must clear it).
    var suspendedInSession: (descriptorStart: Int, wide: WideCodeFrame?)?

    init(screen: PixelSize) throws(ImageError) {
        canvas = try AnimationCanvas(width: screen.width, height: screen.height)
    }

    init(canvas: consuming AnimationCanvas, position: Position) {
        self.canvas = canvas
        self.position = position
    }
}
