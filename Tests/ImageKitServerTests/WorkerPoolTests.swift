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
