import Foundation

/// A clock whose time moves only when someone sleeps on it (to the deadline, at once) or calls
/// ``advance(by:)``: plays an ``AnimatedImagePlayer`` as fast as frames decode, with the
/// timeline still computed — for tools that walk every frame and for tests that must not sleep.
///
/// ```swift
/// let clock = VirtualClock()
/// for try await frame in AnimatedImagePlayer(animation, loops: 1, clock: clock) {
///     clock.advance(by: .milliseconds(250))   // a consumer slower than the frame rate
///     print(frame.index, frame.skippedFrames)
/// }
/// ```
public final class VirtualClock: Clock, @unchecked Sendable {
    // Invariant for @unchecked Sendable: `current` is only touched under `lock`.
    /// A point on the virtual clock: the time advanced since it was made.
    public struct Instant: InstantProtocol, Hashable, Sendable {
        /// Time since the clock was made.
        public var offset: Duration

        /// The instant `offset` after the clock started.
        public init(offset: Duration = .zero) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }

        public func duration(to other: Instant) -> Duration { other.offset - offset }

        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let lock = NSLock()
    private var current = Instant()

    /// A clock at time zero.
    public init() {}

    public var now: Instant { lock.withLock { current } }

    public var minimumResolution: Duration { .zero }

    /// Returns at once, with the clock moved on to `deadline` if that is later than now.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        lock.withLock { current = max(current, deadline) }
    }

    /// Moves the clock on by `duration` (a consumer's own time).
    public func advance(by duration: Duration) {
        lock.withLock { current = current.advanced(by: max(duration, .zero)) }
    }
}
