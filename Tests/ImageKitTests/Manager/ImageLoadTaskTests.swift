import Foundation
import XCTest

@testable import ImageKit

/// A caller's events: in order, nothing after the final one, no lock held while the sink runs.
final class ImageLoadTaskTests: XCTestCase {
    /// What a sink saw, and how the caller ended.
    final class Recorder: @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        var ends: [Bool] = []
        func record(_ event: ImageLoadTask.Event) {
            let name: String
            switch event {
            case .progress(let progress): name = "progress \(progress.receivedBytes)"
            case .preview: name = "preview"
            case .intermediate: name = "intermediate"
            case .notModified: name = "notModified"
            case .finished(.failure(let error)?): name = "finished \(error.code)"
            case .finished: name = "finished"
            }
            lock.lock(); events.append(name); lock.unlock()
        }
        func end(_ cancelled: Bool) { lock.lock(); ends.append(cancelled); lock.unlock() }
        var snapshot: (events: [String], ends: [Bool]) { lock.lock(); defer { lock.unlock() }; return (events, ends) }
    }

    func testACallerCancellingFromItsOwnSinkGetsTheCancellationNextAndNothingAfter() {
        let recorder = Recorder()
        let holder = Locked<ImageLoadTask?>(nil)
        let task = ImageLoadTask(
            id: 1, wantsProgress: true, wantsPreviews: false,
            sink: { event in
                recorder.record(event)
                // Re-entering the task from its sink: with the lock held across the sink this deadlocked.
                if case .progress(let progress) = event, progress.receivedBytes == 2 {
                    holder.withLock { $0 }?.cancel()
                }
            }, onEnd: { _, cancelled in recorder.end(cancelled) })
        holder.withLock { $0 = task }
        for bytes in 1...4 { task.send(.progress(ImageLoadProgress(receivedBytes: Int64(bytes), expectedBytes: 4))) }
        task.send(.finished(nil))
        let seen = recorder.snapshot
        XCTAssertEqual(seen.events, ["progress 1", "progress 2", "finished cancelled"])
        XCTAssertEqual(seen.ends, [true])
        XCTAssertTrue(task.isCancelled)
        XCTAssertTrue(task.isFinished)
    }

    func testEventsFromManyThreadsArriveInOrderPerThreadAndNoneAfterTheEnd() {
        for _ in 0..<20 {
            let recorder = Recorder()
            let task = ImageLoadTask(
                id: 1, wantsProgress: true, wantsPreviews: false,
                sink: { recorder.record($0) }, onEnd: { _, cancelled in recorder.end(cancelled) })
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<200 {
                    task.send(
                        .progress(ImageLoadProgress(receivedBytes: Int64(thread * 1000 + index), expectedBytes: nil)))
                    if thread == 3 && index == 100 { task.send(.finished(nil)) }
                }
            }
            let seen = recorder.snapshot
            XCTAssertEqual(seen.events.last, "finished")
            XCTAssertEqual(seen.events.filter { $0.hasPrefix("finished") }.count, 1)
            XCTAssertEqual(seen.ends, [false])
            // Each thread's events keep their order.
            for thread in 0..<4 {
                let mine = seen.events.compactMap { name -> Int? in
                    guard name.hasPrefix("progress "), let value = Int(name.dropFirst(9)), value / 1000 == thread else {
                        return nil
                    }
                    return value
                }
                XCTAssertEqual(mine, mine.sorted(), "thread \(thread)")
            }
        }
    }
}
