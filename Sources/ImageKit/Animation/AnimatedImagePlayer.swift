import Foundation

// Spec: ANI-04.
/// Plays an ``AnimatedImage``: an `AsyncSequence` of the frames to show, each when it is due
/// (SDWebImage's `SDAnimatedImagePlayer`).
///
/// The timeline is fixed when iteration starts: frame *i* of loop *n* is due at
/// `start + n × loop length + the durations before i`, each duration divided by
/// ``playbackRate`` (durations of 10 ms or less count as 100 ms, as the GIF and APNG decoders
/// do). A consumer that falls behind gets the frame due now and the ones it missed are dropped
/// — composited onto the canvas (later frames build on them) but never copied out or held
/// (``Frame/skippedFrames`` counts them): playback does not drift. The
/// sequence ends when the last loop's last frame has had its time (``loops`` 0: never).
///
/// The next frame is decoded in the background while the current one shows (frames of 256 KiB
/// and more; smaller ones decode faster than a hand-off between threads). Frames already
/// shown are kept for later loops while they fit in ``maxBufferBytes``; by default that is
/// SDWebImage's rule, `min(20 % of the memory available to the process, 60 % of the memory free
/// now)`. ``trimBuffer()`` drops them (memory pressure), and so does ``AnimatedImage/trim()``
/// (which the memory cache calls when it is trimmed); the next loop decodes them again.
///
/// ```swift
/// let animation = try AnimatedImage(data: data)
/// for try await frame in AnimatedImagePlayer(animation) {
///     show(frame.bitmap)          // on time; late consumers skip, never drift
/// }
/// ```
public struct AnimatedImagePlayer<C: Clock>: AsyncSequence, Sendable where C.Duration == Duration {
    /// One frame to show.
    public struct Frame: Sendable {
        /// The frame's index in the animation.
        public var index: Int
        /// Which pass through the animation, from 0.
        public var loop: Int
        /// The canvas showing the frame (full size, straight alpha).
        public var bitmap: Bitmap
        /// How long it shows, in seconds, at the playback rate.
        public var duration: Double
        /// Frames dropped just before this one because the consumer was late.
        public var skippedFrames: Int
    }

    /// The animation being played.
    public let image: AnimatedImage
    /// Speed: 2 plays twice as fast. Must be positive.
    public let playbackRate: Double
    /// Passes to play: the image's loop count unless given; 0 = forever.
    public let loops: Int
    /// The clock the frame durations are measured on.
    public let clock: C
    /// The most bytes of decoded frames kept for display and later loops (at least one frame
    /// is always decoded ahead).
    public let maxBufferBytes: Int
    private let buffer: AnimationFrameBuffer

    /// Frames of at least this many bytes are decoded ahead in the background; smaller ones
    /// when they are due (a task hand-off costs more than decoding them).
    static var backgroundDecodeThreshold: Int { 256 << 10 }

    /// - Parameters:
    ///   - image: the animation to play.
    ///   - playbackRate: speed: 2 plays twice as fast; must be positive.
    ///   - clock: the clock frame durations are measured on.
    ///   - loops: nil: the image's ``AnimatedImage/loopCount``.
    ///   - maxBufferBytes: nil: ``defaultMaxBufferBytes()``.
    public init(
        _ image: AnimatedImage, playbackRate: Double = 1, loops: Int? = nil, maxBufferBytes: Int? = nil, clock: C
    ) {
        precondition(playbackRate > 0 && playbackRate.isFinite, "the playback rate must be positive")
        self.image = image
        self.playbackRate = playbackRate
        self.loops = Swift.max(0, loops ?? image.loopCount)
        self.clock = clock
        self.maxBufferBytes = Swift.max(0, maxBufferBytes ?? Self.defaultMaxBufferBytes())
        buffer = AnimationFrameBuffer(maxBytes: self.maxBufferBytes)
        image.register(buffer)
    }

    /// SDWebImage's default buffer size: `Swift.min(20 % of the memory available to the process
    /// (its cgroup limit, else physical memory), 60 % of the memory free now (MemAvailable))`.
    public static func defaultMaxBufferBytes() -> Int {
        // Reading /proc and the cgroup files costs ~100 µs: more than playing a small GIF.
        // Free memory changes slowly; read it at most once a second.
        let time = ProcessInfo.processInfo.systemUptime
        return DefaultBufferSize.cached.withLock { cached in
            if let value = cached.value, time - cached.time < 1 { return value }
            let value = measureDefaultMaxBufferBytes()
            cached = (value, time)
            return value
        }
    }

    private static func measureDefaultMaxBufferBytes() -> Int {
        let available = Double(MemoryLimits.availableMemory())
        var free = available
        if let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("MemAvailable:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        {
            free = Swift.min(free, kilobytes * 1024)
        }
        return Int(Swift.min(available * 0.2, free * 0.6))
    }

    /// Drops the frames kept for later loops (the frame decoded ahead stays).
    public func trimBuffer() { buffer.trim() }

    /// The most bytes of decoded frames the player has held at once so far.
    public var peakBufferBytes: Int { buffer.peakBytes }

    /// Bytes of decoded frames held now.
    public var bufferedBytes: Int { buffer.bytes }

    public func makeAsyncIterator() -> Iterator {
        Iterator(player: self, buffer: buffer)
    }

    /// Yields each frame when it is due on the player's clock; ends after the last loop.
    public struct Iterator: AsyncIteratorProtocol {
        private let player: AnimatedImagePlayer
        private let buffer: AnimationFrameBuffer
        /// When each frame starts within a loop, and the loop's length.
        private let offsets: [Duration]
        private let durations: [Double]
        private let loopLength: Duration
        private var start: C.Instant?
        /// The frame shown last, as loop × frame count + index.
        private var shown = -1
        private var prefetch: (ordinal: Int, task: Task<Bitmap, any Error>)?
        private var isFinished = false

        init(player: AnimatedImagePlayer, buffer: AnimationFrameBuffer) {
            self.player = player
            self.buffer = buffer
            durations = player.image.durations.map { ($0 <= 0.01 ? 0.1 : $0) / player.playbackRate }
            var offsets: [Duration] = []
            var total = Duration.zero
            for duration in durations {
                offsets.append(total)
                total += .seconds(duration)
            }
            self.offsets = offsets
            loopLength = total
        }

        private var frameCount: Int { durations.count }

        /// Ordinals past this one are beyond the end of playback.
        private var lastOrdinal: Int? { player.loops == 0 ? nil : player.loops * frameCount - 1 }

        private func due(_ ordinal: Int) -> C.Instant {
            start!.advanced(by: loopLength * (ordinal / frameCount) + offsets[ordinal % frameCount])
        }

        /// The ordinal of the frame showing at `instant`.
        private func ordinal(at instant: C.Instant) -> Int {
            let elapsed = start!.duration(to: instant)
            guard elapsed > .zero, loopLength > .zero else { return 0 }
            let loop = Int(elapsed / loopLength)
            let within = elapsed - loopLength * loop
            // The last frame that starts at or before `within` (offsets ascend from zero).
            var low = 0, high = frameCount - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if offsets[middle] <= within { low = middle } else { high = middle - 1 }
            }
            return loop * frameCount + low
        }

        public mutating func next() async throws -> Frame? {
            guard !isFinished else { return nil }
            var target = shown + 1
            var skipped = 0
            if start == nil {
                start = player.clock.now
                target = 0
            } else {
                if let last = lastOrdinal, target > last {
                    // The last frame has its time, then the sequence ends.
                    try await player.clock.sleep(
                        until: due(shown).advanced(by: .seconds(durations[shown % frameCount])), tolerance: nil)
                    finish()
                    return nil
                }
                try await player.clock.sleep(until: due(target), tolerance: nil)
                // Late (the next frame is due already): show what is due now; what was missed
                // is dropped, not copied out.
                let now = player.clock.now
                if lastOrdinal.map({ target < $0 }) ?? true, due(target + 1) <= now {
                    var current = ordinal(at: now)
                    if let last = lastOrdinal { current = Swift.min(current, last) }
                    if current > target {
                        skipped = current - target
                        target = current
                    }
                }
            }
            let index = target % frameCount
            let bitmap: Bitmap
            do {
                bitmap = try await frame(ordinal: target)
            } catch {
                finish()
                throw error
            }
            shown = target
            // Keep it for a later loop while it fits.
            if lastOrdinal.map({ target + frameCount <= $0 }) ?? true {
                buffer.keep(index, bitmap)
            }
            startPrefetch(after: target)
            return Frame(
                index: index, loop: target / frameCount, bitmap: bitmap, duration: durations[index],
                skippedFrames: skipped)
        }

        /// Frame `ordinal` from the buffer, the prefetch, or decoded now.
        private mutating func frame(ordinal: Int) async throws -> Bitmap {
            let index = ordinal % frameCount
            if let kept = buffer.kept(index) { return kept }
            if let prefetch, prefetch.ordinal % frameCount == index {
                self.prefetch = nil
                let bitmap = try await prefetch.task.value
                buffer.leadEnded()
                return bitmap
            }
            if let prefetch {
                // Skipped past it. Let it end first (it stops if it has not begun): decoding
                // past it while it waits for the decoder would send the decoder back to it.
                prefetch.task.cancel()
                _ = try? await prefetch.task.value
                self.prefetch = nil
                buffer.leadEnded()
            }
            return try player.image.frame(at: index, takingCheckpoints: false)
        }

        private mutating func startPrefetch(after ordinal: Int) {
            let next = ordinal + 1
            if let last = lastOrdinal, next > last { return }
            // A small frame decodes faster than a task hand-off takes: decode it when it is due.
            guard player.image.frameBytes >= AnimatedImagePlayer.backgroundDecodeThreshold else { return }
            let index = next % frameCount
            guard buffer.kept(index) == nil else { return }
            let image = player.image
            buffer.leadStarted(bytes: image.frameBytes)
            prefetch = (
                next,
                Task.detached(priority: .userInitiated) {
                    // Skipped past before it began: decoding it now would send the decoder back.
                    try Task.checkCancellation()
                    return try image.frame(at: index, takingCheckpoints: false)
                }
            )
        }

        private mutating func finish() {
            isFinished = true
            if let prefetch {
                prefetch.task.cancel()
                buffer.leadEnded()
            }
            prefetch = nil
        }
    }
}

extension AnimatedImagePlayer where C == ContinuousClock {
    /// A player on the wall clock (`ContinuousClock`).
    public init(_ image: AnimatedImage, playbackRate: Double = 1, loops: Int? = nil, maxBufferBytes: Int? = nil) {
        self.init(
            image, playbackRate: playbackRate, loops: loops, maxBufferBytes: maxBufferBytes, clock: ContinuousClock())
    }
}

/// The default buffer size, remembered for a second.
enum DefaultBufferSize {
    static let cached = Locked<(value: Int?, time: TimeInterval)>((nil, 0))
}

/// The frames a player holds: the one decoded ahead (counted while it is in flight) and those
/// kept for later loops, within a byte budget.
final class AnimationFrameBuffer: Sendable {
    private struct State {
        var frames: [Int: Bitmap] = [:]
        var keptBytes = 0
        var leadBytes = 0
        var peak = 0
    }

    let maxBytes: Int
    private let state = Locked(State())

    init(maxBytes: Int) { self.maxBytes = maxBytes }

    func kept(_ index: Int) -> Bitmap? { state.withLock { $0.frames[index] } }

    /// Keeps `bitmap` for a later loop if it fits beside a frame decoded ahead (room for one is
    /// always left).
    func keep(_ index: Int, _ bitmap: Bitmap) {
        let size = bitmap.bytesPerRow * bitmap.height
        state.withLock { state in
            guard state.frames[index] == nil, state.keptBytes + size + Swift.max(state.leadBytes, size) <= maxBytes
            else { return }
            state.frames[index] = bitmap
            state.keptBytes += size
            state.peak = max(state.peak, state.keptBytes + state.leadBytes)
        }
    }

    func leadStarted(bytes: Int) {
        state.withLock { state in
            state.leadBytes = bytes
            state.peak = max(state.peak, state.keptBytes + state.leadBytes)
        }
    }

    func leadEnded() { state.withLock { $0.leadBytes = 0 } }

    func trim() {
        state.withLock { state in
            state.frames.removeAll()
            state.keptBytes = 0
        }
    }

    var bytes: Int { state.withLock { $0.keptBytes + $0.leadBytes } }
    var peakBytes: Int { state.withLock { $0.peak } }
}
