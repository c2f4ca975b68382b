import Foundation
import XCTest

@testable import ImageKit

/// The memory-pressure monitor against synthetic kernel files: no real pressure is made.
final class MemoryPressureTests: XCTestCase {
    /// Kernel files a test writes; the monitor reads them instead of /proc and /sys.
    final class FakeFiles: Sendable {
        let files = Locked<[String: String]>([
            "/proc/self/cgroup": "0::/app.slice/imagekit.service\n",
            "/cg/app.slice/imagekit.service/memory.pressure":
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
            "/cg/app.slice/imagekit.service/memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
            "/cg/app.slice/imagekit.service/memory.current": "100000000\n",
            "/cg/app.slice/imagekit.service/memory.max": "1000000000\n",
        ])
        func set(_ name: String, _ contents: String) {
            files.withLock { $0["/cg/app.slice/imagekit.service/" + name] = contents }
        }
        func read(_ path: String) -> String? { files.withLock { $0[path] } }
    }

    func bitmapImage(_ side: Int) throws -> DecodedImage {
        DecodedImage(
            frames: [ImageFrame(bitmap: try PixelBuffer(width: side, height: side).freeze(isOpaque: true))],
            format: .png)
    }

    func testPressureSignalsTrimTheWatchedCaches() throws {
        let files = FakeFiles()
        let monitor = MemoryPressureMonitor(interval: 0, cgroupRoot: "/cg", readFile: { files.read($0) })
        let cache = MemoryCache(configuration: .init(costLimit: 100 << 20))
        for index in 0..<8 { cache.setImage(try bitmapImage(256), forKey: "\(index)") }  // 8 × 256 KiB
        let full = cache.totalCost
        monitor.watch(cache)
        let heard = Locked<[MemoryPressureMonitor.Level]>([])
        monitor.addHandler { level in heard.withLock { $0.append(level) } }

        XCTAssertEqual(monitor.poll(now: 0), .normal)
        XCTAssertEqual(cache.totalCost, full)

        // Stalls: some avg10 = 12 % is a warning → half.
        files.set(
            "memory.pressure",
            "some avg10=12.50 avg60=3.00 avg300=1.00 total=5\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=1\n")
        XCTAssertEqual(monitor.poll(now: 1), .warning)
        XCTAssertLessThanOrEqual(cache.totalCost, full / 2)
        XCTAssertGreaterThan(cache.totalCost, 0)

        // The same warning a second later does not trim again; five seconds later it does.
        let half = cache.totalCost
        XCTAssertEqual(monitor.poll(now: 2), .warning)
        XCTAssertEqual(cache.totalCost, half)

        // The cgroup hit its high mark since the last look: critical → empty.
        files.set("memory.events", "low 0\nhigh 3\nmax 0\noom 0\noom_kill 0\n")
        XCTAssertEqual(monitor.poll(now: 3), .critical)
        XCTAssertEqual(cache.totalCost, 0)
        XCTAssertEqual(heard.withLock { $0 }, [.warning, .critical])

        // Back to normal: the event counter no longer grows, the stalls are gone.
        files.set(
            "memory.pressure",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
        XCTAssertEqual(monitor.poll(now: 4), .normal)
    }

    func testLevelsFromEachSignal() {
        typealias Monitor = MemoryPressureMonitor
        XCTAssertEqual(Monitor.level(of: .init(usage: 91, limit: 100), previousEvents: nil), .warning)
        XCTAssertEqual(Monitor.level(of: .init(usage: 96, limit: 100), previousEvents: nil), .critical)
        XCTAssertEqual(Monitor.level(of: .init(someAverage10: 45), previousEvents: nil), .critical)
        XCTAssertEqual(Monitor.level(of: .init(someAverage10: 5, fullAverage10: 11), previousEvents: nil), .critical)
        XCTAssertEqual(Monitor.level(of: .init(limitEvents: 2), previousEvents: 2), .normal)
        XCTAssertEqual(Monitor.level(of: .init(limitEvents: 3), previousEvents: 2), .critical)
        XCTAssertEqual(Monitor.level(of: .init(available: 8, total: 100), previousEvents: nil), .warning)
        XCTAssertEqual(Monitor.level(of: .init(available: 4, total: 100), previousEvents: nil), .critical)
        XCTAssertEqual(Monitor.level(of: .init(available: 50, total: 100), previousEvents: nil), .normal)
    }

    func testOutsideACgroupMeminfoIsRead() {
        let monitor = MemoryPressureMonitor(
            interval: 0,
            readFile: { path in
                path == "/proc/meminfo"
                    ? "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:     600000 kB\n" : nil
            })
        let reading = monitor.read()
        XCTAssertEqual(reading.total, 16_000_000 * 1024)
        XCTAssertEqual(reading.available, 600_000 * 1024)
        XCTAssertEqual(monitor.poll(), .critical)
    }

    func testTheRealFilesParse() {
        // Whatever this machine says, reading it must not fail or crash.
        _ = MemoryPressureMonitor(interval: 0).read()
    }
}
