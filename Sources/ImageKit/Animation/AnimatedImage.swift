import Foundation

/// An animation that decodes its frames on demand (SDWebImage's `SDAnimatedImage`): GIF, APNG,
/// animated WebP, or any format whose registered coder is ``AnimatedImageDecoding``. It holds
/// the encoded bytes and answers the frame count, loop count, durations and canvas size from the
/// headers alone.
///
/// ``frame(at:)`` composites the frame onto a full-size canvas, honouring every disposal and
/// blend mode. Frames in order cost one decode each; a jump goes back to the nearest saved
/// canvas (a checkpoint, taken every ``checkpointInterval`` frames as the decode passes) and
/// replays fewer than ``checkpointInterval`` frames. The memory held is the bytes, the current
/// canvas and the checkpoints (``retainedBytes``) — not frames × canvas.
///
/// ```swift
/// let animation = try AnimatedImage(data: gifData)
/// print(animation.frameCount, animation.loopCount, animation.totalDuration)
/// let tenth = try animation.frame(at: 9)        // an ImageFrame: bitmap + duration
/// for try await step in AnimatedImagePlayer(animation) { show(step.bitmap) }
/// ```
///
/// Thread-safe: frames are decoded one at a time under a lock.
public final class AnimatedImage: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `source` and `stats` are only touched under `lock`;
    // everything else is immutable.
    /// The encoded bytes, as given.
    public let data: Data
    /// The container format of the bytes (GIF, APNG's `.png`, WebP, AVIF, JPEG XL).
    public let format: ImageFormat
    /// The canvas every frame is composited onto.
    public let canvasSize: PixelSize
    /// Display time of each frame, in seconds (the decoders' rules: GIF and APNG delays of
    /// 10 ms or less are 100 ms; a single frame lasts 0).
    public let durations: [Double]
    /// How many times the animation plays: 0 = forever.
    public let loopCount: Int
    /// Frames between checkpoints: the most frames a seek replays is one less.
    public let checkpointInterval: Int

    /// The limits given at creation: one canvas is checked against them at once, all frames
    /// by ``decodedImage()``.
    public let limits: DecodingLimits

    private let lock = NSLock()
    private let source: any AnimationFrameSource
    /// Buffers of the players playing this image, trimmed with it (weak: a player that ended
    /// is not kept alive by its image).
    private var playerBuffers: [WeakFrameBuffer] = []

    /// Reads the headers of `data`; no frame is decoded.
    ///
    /// The decoder is the one `coders` would decode `data` with, when it plays animations frame
    /// by frame (``AnimatedImageDecoding``: GIF, APNG and animated WebP among the built-in ones,
    /// and any coder an application registers with that capability).
    ///
    /// - Parameters:
    ///   - data: the encoded animation; kept, never copied.
    ///   - limits: checked against one canvas (the frames are never all held).
    ///   - coders: where the decoder is found; ``ImageCodersManager/shared`` by default.
    /// - Throws: ``ImageError``: `unsupportedFormat` for data no registered decoder plays frame
    ///   by frame; the header's errors (`badImageData`, `truncatedData`, `decompressionBomb`,
    ///   `zeroPixels`).
    public convenience init(data: Data, limits: DecodingLimits = .default, coders: ImageCodersManager = .shared)
        throws(ImageError)
    {
        let signature = ImageSignature(data)
        guard let decoder = coders.decoder(for: signature, as: (any AnimatedImageDecoding).self) else {
            throw ImageError(.unsupportedFormat, "no decoder plays \(signature.format) frame by frame")
        }
        try self.init(data: data, limits: limits, decoder: decoder)
    }

    /// Reads the headers of `data` with `decoder`; no frame is decoded.
    ///
    /// - Throws: ``ImageError``: `unsupportedFormat` when `decoder` does not play `data` frame
    ///   by frame; the header's errors.
    public init(data: Data, limits: DecodingLimits = .default, decoder: any AnimatedImageDecoding) throws(ImageError) {
        let signature = ImageSignature(data)
        guard let info = try decoder.animationInfo(data, limits: limits), !info.durations.isEmpty else {
            throw ImageError(
                .unsupportedFormat, "not an animation \(type(of: decoder)) plays frame by frame (\(signature.format))")
        }
        try limits.checkPixels(width: info.canvasSize.width, height: info.canvasSize.height)
        try limits.check(width: info.canvasSize.width, height: info.canvasSize.height)
        self.data = data
        self.limits = limits
        format = signature.format
        canvasSize = info.canvasSize
        durations = info.durations
        loopCount = info.loopCount
        // At most about 16 checkpoints, and no fewer than 8 frames between them.
        checkpointInterval = max(8, (info.durations.count + 15) / 16)
        source = Self.seeker(
            over: try decoder.makeFrameCursor(data, info: info, limits: limits),
            frameCount: info.durations.count, interval: checkpointInterval)
    }

    /// The seeker over a cursor of whatever type the decoder made.
    private static func seeker<Cursor: AnimationFrameCursor>(over cursor: Cursor, frameCount: Int, interval: Int)
        -> any AnimationFrameSource
    {
        AnimationSeeker(cursor, frameCount: frameCount, interval: interval)
    }

    /// The number of frames, from the headers.
    public var frameCount: Int { durations.count }
    /// The canvas width in pixels; every frame is drawn at this size.
    public var width: Int { canvasSize.width }
    /// The canvas height in pixels.
    public var height: Int { canvasSize.height }
    /// One loop's length in seconds.
    public var totalDuration: Double { durations.reduce(0, +) }
    /// The bytes of one composited frame (4 per pixel; row padding aside).
    public var frameBytes: Int { canvasSize.width * 4 * canvasSize.height }

    /// Frame `index`: the canvas showing it (full size, straight alpha) and its duration.
    ///
    /// - Throws: ``ImageError``: `invalidArgument` for an index outside `0..<frameCount`; the
    ///   decoder's errors for damaged data (a frame the headers promised but the data lacks is
    ///   `badImageData` or `truncatedData`).
    public func frame(at index: Int) throws(ImageError) -> ImageFrame {
        ImageFrame(bitmap: try frame(at: index, takingCheckpoints: true), duration: durations[index])
    }

    /// Frame `index`'s canvas. Playback passes `takingCheckpoints` false: it only goes forward
    /// (and back to the start), so checkpoints would be memory for nothing.
    func frame(at index: Int, takingCheckpoints: Bool) throws(ImageError) -> Bitmap {
        guard index >= 0, index < frameCount else {
            throw ImageError(.invalidArgument, "frame \(index) of an animation of \(frameCount) frames")
        }
        lock.lock()
        defer { lock.unlock() }
        return try source.frame(at: index, takingCheckpoints: takingCheckpoints)
    }

    /// The bytes this image holds besides ``data``: the decoder's canvas, its checkpoints and the
    /// last frame handed out.
    public var retainedBytes: Int {
        lock.lock()
        defer { lock.unlock() }
        return source.retainedBytes
    }

    /// Frames composited so far, counting replays after seeks and frames passed over (for tests
    /// and the bench).
    public var decodedFrameCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return source.decodedFrames
    }

    /// Memory pressure: drops the checkpoints (later seeks replay from the start until they are
    /// taken again), the frames that the players of this image keep for later loops
    /// (``AnimatedImagePlayer/trimBuffer()``) and the spare frame memory kept for reuse. The
    /// memory cache calls it when it is trimmed.
    public func trim() {
        PixelMemory.releaseSpares()
        lock.lock()
        source.trim()
        playerBuffers.removeAll { $0.buffer == nil }
        let buffers = playerBuffers.compactMap(\.buffer)
        lock.unlock()
        for buffer in buffers { buffer.trim() }
    }

    /// Registers a player's buffer so that ``trim()`` reaches it.
    func register(_ buffer: AnimationFrameBuffer) {
        lock.lock()
        defer { lock.unlock() }
        playerBuffers.removeAll { $0.buffer == nil }
        playerBuffers.append(WeakFrameBuffer(buffer: buffer))
    }

    /// Every frame decoded, as the coders' eager decode gives them.
    ///
    /// - Throws: ``ImageError``: `decompressionBomb` when all frames together exceed
    ///   ``limits`` (``DecodingLimits/maxTotalBytes``), before any is decoded; the decoder's
    ///   errors.
    public func decodedImage() throws(ImageError) -> DecodedImage {
        try limits.check(width: width, height: height, frames: frameCount)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(frameCount)
        for index in 0..<frameCount {
            frames.append(
                ImageFrame(bitmap: try frame(at: index, takingCheckpoints: false), duration: durations[index]))
        }
        return DecodedImage(frames: frames, loopCount: loopCount, format: format)
    }
}

private struct WeakFrameBuffer {
    weak var buffer: AnimationFrameBuffer?
}

/// Random access over an ``AnimationFrameCursor``.
protocol AnimationFrameSource: AnyObject {
    func frame(at index: Int, takingCheckpoints: Bool) throws(ImageError) -> Bitmap
    var retainedBytes: Int { get }
    var decodedFrames: Int { get }
    func trim()
}

/// The checkpoint policy: one checkpoint before every `interval`-th frame, taken as a decode
/// passes it; a seek restores the nearest one at or before the frame, unless going on from
/// where the cursor stands is shorter.
final class AnimationSeeker<Cursor: AnimationFrameCursor>: AnimationFrameSource {
    private let cursor: Cursor
    private let frameCount: Int
    private let interval: Int
    private var checkpoints: [Int: AnimationCheckpoint<Cursor.Position>] = [:]
    private var last: (index: Int, bitmap: Bitmap)?
    private(set) var decodedFrames = 0

    init(_ cursor: Cursor, frameCount: Int, interval: Int) {
        self.cursor = cursor
        self.frameCount = frameCount
        self.interval = interval
    }

    func frame(at index: Int, takingCheckpoints: Bool) throws(ImageError) -> Bitmap {
        if let last, last.index == index { return last.bitmap }
        let nearest = stride(from: index - index % interval, through: 0, by: -interval).first { checkpoints[$0] != nil }
        let position = cursor.nextIndex
        if position > index || (nearest.map { $0 > position } ?? false) {
            // Behind us, or a checkpoint is closer than going on.
            if let nearest, let checkpoint = checkpoints[nearest] {
                try cursor.restore(checkpoint)
            } else {
                try cursor.rewind()
            }
        }
        var bitmap: Bitmap?
        while cursor.nextIndex <= index {
            let next = cursor.nextIndex
            if takingCheckpoints, next % interval == 0, next > 0, checkpoints[next] == nil {
                checkpoints[next] = try cursor.checkpoint()
            }
            // Frames on the way are drawn, not copied out.
            if next < index { try cursor.skipNext() } else { bitmap = try cursor.decodeNext() }
            decodedFrames += 1
        }
        last = (index, bitmap!)
        return bitmap!
    }

    var retainedBytes: Int {
        let canvas = last.map { $0.bitmap.bytesPerRow * $0.bitmap.height } ?? 0
        return checkpoints.values.reduce(0) { $0 + $1.bytes } + 2 * canvas
    }

    func trim() {
        checkpoints.removeAll()
    }
}
