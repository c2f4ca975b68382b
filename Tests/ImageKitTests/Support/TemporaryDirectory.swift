import Foundation

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init(_ name: String = "imagekit-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    var path: String { url.path }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// A clock tests move by hand.
final class TestClock: @unchecked Sendable {
    // Guarded by `lock`.
    private var current: Date
    private let lock = NSLock()

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }

    var now: Date { lock.lock(); defer { lock.unlock() }; return current }

    func advance(_ seconds: TimeInterval) { lock.lock(); current += seconds; lock.unlock() }

    var function: @Sendable () -> Date { { [self] in now } }
}
