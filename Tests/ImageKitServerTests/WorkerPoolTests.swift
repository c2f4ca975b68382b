import Foundation
import XCTest

@testable import ImageKitServer

/// The service's bounded pool: `width` at once, `queueLimit` waiting, the rest refused at once.
final class WorkerPoolTests: XCTestCase {
    func testRunsWidthAtOnceQueuesTheLimitAndRefusesTheRest() async throws {
        let pool = WorkerPool(width: 1, queueLimit: 1)
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        async let first: Int? = pool.run {
            started.signal()
            release.wait()  // holds the only worker
            return 1
        }
        started.wait()
        async let second: Int? = pool.run { 2 }
        while pool.waitingCount < 1 { try await Task.sleep(for: .milliseconds(1)) }
        let refused = await pool.run { 3 }
        XCTAssertNil(refused, "the queue is full: refused at once")
        XCTAssertEqual(pool.runningCount, 1)
        release.signal()
        let results = await [first, second]
        XCTAssertEqual(results, [1, 2])
        let later = await pool.run { 4 }
        XCTAssertEqual(later, 4, "room again")
    }

    /// Places reserved ahead of their work count with running and waiting work, are spent once,
    /// and come back when released or dropped unused.
    func testReservedPlacesCountUntilSpentOrGivenBack() async {
        let pool = WorkerPool(width: 1, queueLimit: 1)
        let first = pool.reserve()
        let second = pool.reserve()
        XCTAssertNotNil(first)
        XCTAssertNotNil(second)
        XCTAssertNil(pool.reserve(), "both places are held")
        let unreserved = await pool.run { 0 }
        XCTAssertNil(unreserved, "work without a place finds none free")
        first?.release()
        first?.release()  // once only
        XCTAssertEqual(pool.reservedCount, 1)
        do {
            let dropped = pool.reserve()
            XCTAssertNotNil(dropped)
        }
        XCTAssertEqual(pool.reservedCount, 1, "a place dropped unused comes back")
        let third = pool.reserve()
        XCTAssertNil(pool.reserve())
        let two = await pool.run(reservation: second) { 2 }
        let three = await pool.run(reservation: third) { 3 }
        XCTAssertEqual([two, three], [2, 3], "work in its reserved place is never refused")
        XCTAssertEqual(pool.reservedCount, 0)
        second?.release()  // spent already: gives back nothing
        XCTAssertEqual(pool.reservedCount, 0)
        let again = await pool.run(reservation: second) { 4 }
        XCTAssertEqual(again, 4, "a spent reservation runs as work without one, in a free place")
    }

    /// A reserved place waits in the queue when the worker is busy, even if unreserved work
    /// would be refused there.
    func testReservedWorkQueuesBehindABusyWorker() async throws {
        let pool = WorkerPool(width: 1, queueLimit: 1)
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let held = pool.reserve()
        XCTAssertNotNil(held)
        async let first: Int? = pool.run {
            started.signal()
            release.wait()
            return 1
        }
        started.wait()
        let refused = await pool.run { 0 }
        XCTAssertNil(refused, "the one free place is the reserved one")
        async let second: Int? = pool.run(reservation: held) { 2 }
        while pool.waitingCount < 1 { try await Task.sleep(for: .milliseconds(1)) }
        XCTAssertEqual(pool.reservedCount, 0)
        release.signal()
        let results = await [first, second]
        XCTAssertEqual(results, [1, 2])
    }

    /// The worker is given back before its caller hears the result: with one worker and no
    /// queue, work submitted right after the last result is never refused (it was, when the
    /// caller resumed before the worker counted itself free: the service then answered 503 to
    /// identical requests that arrived just after the first one's result).
    func testAResultArrivesAfterItsWorkerIsFree() async {
        let pool = WorkerPool(width: 1, queueLimit: 0)
        var refused = 0
        for index in 0..<500 where await pool.run({ index }) == nil { refused += 1 }
        XCTAssertEqual(refused, 0)
    }
}
