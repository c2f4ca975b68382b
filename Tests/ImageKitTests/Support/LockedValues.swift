import Foundation

/// Thread-safe helpers for completion-handler tests.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false  // guarded by lock
    func set() { lock.lock(); flag = true; lock.unlock() }
    var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }
}

final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0  // guarded by lock
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

final class LockedList<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var elements: [Element] = []  // guarded by lock
    func append(_ element: Element) { lock.lock(); elements.append(element); lock.unlock() }
    var values: [Element] { lock.lock(); defer { lock.unlock() }; return elements }
}
