import Foundation
import XCTest

@testable import ImageKit

/// The player (ANI-04 on Linux) on a virtual clock: timing, loops, skipping, the buffer bound.
final class AnimatedImagePlayerTests: XCTestCase {
    /// `frames` frames of 32×32, each `duration` seconds, as a GIF (loop forever).
    static func animation(frames: Int, duration: Double = 0.1) throws -> AnimatedImage {
        let images = (0..<frames).map { index in
            ImageFrame(bitmap: TestImages.blocks(width: 32, height: 32, colors: 2 + index % 5), duration: duration)
        }
        let data = try ImageCodersManager.shared.encode(
            DecodedImage(frames: images, loopCount: 0, format: .gif), as: .gif,
            options: .default)
        return try AnimatedImage(data: data)
    }

    func seconds(_ instant: VirtualClock.Instant) -> Double {
        Double(instant.offset.components.seconds) + Double(instant.offset.components.attoseconds) / 1e18
    }

    func testEveryFrameOnTimeLoopsThenEnds() async throws {
        let image = try Self.animation(frames: 5)
        let eager = try ImageCodersManager.shared.decode(image.data)
        let clock = VirtualClock()
        var shown: [(index: Int, loop: Int, at: Double)] = []
        for try await frame in AnimatedImagePlayer(image, loops: 2, clock: clock) {
            shown.append((frame.index, frame.loop, seconds(clock.now)))
            XCTAssertEqual(frame.skippedFrames, 0)
            XCTAssertEqual(frame.duration, 0.1, accuracy: 1e-9)
            XCTAssertTrue(samePixels(frame.bitmap, eager.frames[frame.index].bitmap), "frame \(frame.index)")
        }
        XCTAssertEqual(shown.map(\.index), [0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
        XCTAssertEqual(shown.map(\.loop), [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
        for (ordinal, step) in shown.enumerated() {
            XCTAssertEqual(step.at, Double(ordinal) * 0.1, accuracy: 1e-9, "frame \(ordinal) is shown when it is due")
        }
        XCTAssertEqual(
            seconds(clock.now), 1.0, accuracy: 1e-9, "the sequence ends when the last frame has had its time")
    }

    func testPlaybackRateScalesTheTimeline() async throws {
        let image = try Self.animation(frames: 4, duration: 0.2)
        let clock = VirtualClock()
        var count = 0
        for try await frame in AnimatedImagePlayer(image, playbackRate: 2, loops: 1, clock: clock) {
            XCTAssertEqual(frame.duration, 0.1, accuracy: 1e-9)
            count += 1
        }
        XCTAssertEqual(count, 4)
        XCTAssertEqual(seconds(clock.now), 0.4, accuracy: 1e-9)
    }

    func testALateConsumerSkipsFramesWithoutDrift() async throws {
        let image = try Self.animation(frames: 20)
        let clock = VirtualClock()
        var shown: [Int] = []
        var skipped = 0
        for try await frame in AnimatedImagePlayer(image, loops: 1, clock: clock) {
            // The frame shown is the one due now: no drift however late the consumer is.
            XCTAssertEqual(frame.index, min(19, Int((seconds(clock.now) + 1e-9) / 0.1)))
            shown.append(frame.index)
            skipped += frame.skippedFrames
            clock.advance(by: .milliseconds(250))  // slower than the 100 ms frames
        }
        XCTAssertEqual(shown.first, 0)
        XCTAssertEqual(shown.last, 19, "the last frame is always shown")
        XCTAssertEqual(shown.count + skipped, 20)
        XCTAssertGreaterThan(skipped, 5)
        XCTAssertEqual(
            image.decodedFrameCount, 20, "dropped frames are composited (GIF frames build on them), once each")
    }

    func testTheBufferStaysWithinItsLimitAndServesLaterLoops() async throws {
        let image = try Self.animation(frames: 10)
        let frameBytes = image.frameBytes
        var player = AnimatedImagePlayer(image, loops: 3, maxBufferBytes: 3 * frameBytes, clock: VirtualClock())
        var count = 0
        for try await _ in player { count += 1 }
        XCTAssertEqual(count, 30)
        XCTAssertLessThanOrEqual(player.peakBufferBytes, 3 * frameBytes)
        XCTAssertGreaterThan(player.peakBufferBytes, 0)

        // Room for every frame: the later loops decode nothing.
        let roomy = try Self.animation(frames: 10)
        player = AnimatedImagePlayer(roomy, loops: 3, maxBufferBytes: 64 * frameBytes, clock: VirtualClock())
        for try await _ in player {}
        XCTAssertEqual(roomy.decodedFrameCount, 10)
        XCTAssertEqual(player.bufferedBytes, 10 * frameBytes)
        player.trimBuffer()
        XCTAssertEqual(player.bufferedBytes, 0)

        // One pass keeps nothing.
        let once = AnimatedImagePlayer(
            try Self.animation(frames: 10), loops: 1, maxBufferBytes: 64 * frameBytes, clock: VirtualClock())
        for try await _ in once {}
        XCTAssertLessThanOrEqual(once.peakBufferBytes, frameBytes)
    }

    func testLoopingForeverAndCancellation() async throws {
        let image = try Self.animation(frames: 10)
        XCTAssertEqual(image.loopCount, 0)
        var loops: [Int] = []
        for try await frame in AnimatedImagePlayer(image, clock: VirtualClock()) {
            loops.append(frame.loop)
            if loops.count == 25 { break }
        }
        XCTAssertEqual(loops.last, 2)

        // On the wall clock, cancelling the consuming task ends playback at once.
        let task = Task {
            var count = 0
            for try await _ in AnimatedImagePlayer(image, playbackRate: 0.01) { count += 1 }
            return count
        }
        try await Task.sleep(nanoseconds: 50_000_000)
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("a cancelled playback throws")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
    }

    func testDefaultBufferFollowsSDWebImagesRule() {
        let bytes = AnimatedImagePlayer<ContinuousClock>.defaultMaxBufferBytes()
        XCTAssertGreaterThan(bytes, 0)
        XCTAssertLessThanOrEqual(Double(bytes), Double(MemoryLimits.availableMemory()) * 0.2 + 1)
    }
}
