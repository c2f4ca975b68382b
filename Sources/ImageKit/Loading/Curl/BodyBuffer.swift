import DequeModule
import Foundation

/// Recycles the memory that response bodies are received into.
///
/// A body handed to a caller is `Data` over a pooled buffer whose deallocator gives the buffer
/// back here. The next transfer then writes into pages that are already mapped: a fresh
/// 100 KB `malloc` for every download costs page faults and kernel zeroing that, measured with
/// `make bench-net`, were a third of the downloader's CPU time on loopback. Idle memory is
/// bounded (``maxIdleBytes``); buffers are never shared between two live bodies.
final class BodyBufferPool: Sendable {
    // Unsafe pointers are not Sendable; the pool owns every idle buffer exclusively.
    private struct Buffers: @unchecked Sendable {
        /// Idle buffers by size class, oldest first.
        var idle: [[UnsafeMutableRawPointer]] = Array(repeating: [], count: BodyBufferPool.classCount)
        /// Size class of each idle buffer in the order they came back, for eviction.
        var returnOrder = Deque<Int>()
        var bytes = 0
    }

    /// Most memory kept for reuse; buffers beyond it are freed.
    let maxIdleBytes: Int
    /// Buffers larger than this are never kept.
    let maxPooledCapacity: Int
    private let buffers = Locked(Buffers())

    init(maxIdleBytes: Int = 16 << 20, maxPooledCapacity: Int = 4 << 20) {
        self.maxIdleBytes = maxIdleBytes
        self.maxPooledCapacity = min(maxPooledCapacity, Self.capacity(ofClass: Self.classCount - 1))
    }

    deinit {
        buffers.withLock { buffers in for list in buffers.idle { for pointer in list { free(pointer) } } }
    }

    // Size classes: four per doubling from 16 KiB (16, 20, 24, 28, 32, 40 … KiB), so a buffer
    // wastes at most a quarter of its size and any body of a class fits any buffer of it.
    private static let minimumShift = 14
    static let classCount = 4 * (30 - minimumShift)

    static func capacity(ofClass sizeClass: Int) -> Int {
        let doubling = sizeClass / 4, step = sizeClass % 4
        return (1 << (minimumShift + doubling)) + step * (1 << (minimumShift + doubling - 2))
    }

    /// The smallest class whose capacity holds `size`.
    static func sizeClass(for size: Int) -> Int {
        guard size > 1 << minimumShift else { return 0 }
        let doubling = (Int.bitWidth - (size - 1).leadingZeroBitCount - 1) - minimumShift  // floor(log2(size - 1))
        let quarter = 1 << (minimumShift + doubling - 2)
        let step = (size - (1 << (minimumShift + doubling)) + quarter - 1) / quarter
        return step == 4 ? 4 * (doubling + 1) : 4 * doubling + step
    }

    /// A buffer of at least `size` bytes: an idle one of its size class or the next one up,
    /// else a new one. Nil when out of memory.
    func take(atLeast size: Int) -> (pointer: UnsafeMutableRawPointer, capacity: Int)? {
        let sizeClass = Self.sizeClass(for: max(size, 1))
        guard sizeClass < Self.classCount else {
            return malloc(size).map { ($0, size) }  // beyond every class: never pooled
        }
        let reused = buffers.withLock { buffers -> (UnsafeMutableRawPointer, Int)? in
            for candidate in sizeClass..<min(sizeClass + 2, Self.classCount) {
                if let pointer = buffers.idle[candidate].popLast() {
                    buffers.bytes -= Self.capacity(ofClass: candidate)
                    return (pointer, candidate)
                }
            }
            return nil
        }
        if let (pointer, reusedClass) = reused { return (pointer, Self.capacity(ofClass: reusedClass)) }
        let capacity = Self.capacity(ofClass: sizeClass)
        return malloc(capacity).map { ($0, capacity) }
    }

    /// Takes a buffer back (from any thread). The longest-idle buffers go when over budget.
    func recycle(_ pointer: UnsafeMutableRawPointer, capacity: Int) {
        let sizeClass = Self.sizeClass(for: capacity)
        guard capacity <= maxPooledCapacity, sizeClass < Self.classCount, Self.capacity(ofClass: sizeClass) == capacity
        else {
            free(pointer)
            return
        }
        let evicted = buffers.withLock { buffers -> [UnsafeMutableRawPointer] in
            buffers.idle[sizeClass].append(pointer)
            buffers.returnOrder.append(sizeClass)
            buffers.bytes += capacity
            var evicted: [UnsafeMutableRawPointer] = []
            while buffers.bytes > maxIdleBytes, let oldestClass = buffers.returnOrder.popFirst() {
                // The class's longest-idle buffer; a class already emptied by `take` is skipped.
                guard !buffers.idle[oldestClass].isEmpty else { continue }
                evicted.append(buffers.idle[oldestClass].removeFirst())
                buffers.bytes -= Self.capacity(ofClass: oldestClass)
            }
            if buffers.returnOrder.count > 4 * Self.classCount + buffers.idle.reduce(0, { $0 + $1.count }) {
                // Entries of buffers that were taken again: rebuild so the log stays small.
                buffers.returnOrder = Deque(
                    buffers.idle.indices.flatMap { index in repeatElement(index, count: buffers.idle[index].count) })
            }
            return evicted
        }
        for pointer in evicted { free(pointer) }
    }

    /// Bytes held idle now (for tests).
    var idleBytes: Int { buffers.withLock { $0.bytes } }
}

/// A growable receive buffer from a ``BodyBufferPool``; becomes `Data` without a copy.
struct BodyBuffer: @unchecked Sendable {
    // Invariant for @unchecked Sendable: owned by one transfer and only used under its lock.
    private(set) var pointer: UnsafeMutableRawPointer?
    private(set) var capacity = 0
    private(set) var count = 0
    let pool: BodyBufferPool

    init(pool: BodyBufferPool) {
        self.pool = pool
    }

    /// Makes room for `size` bytes in all (a Content-Length known up front).
    mutating func reserve(_ size: Int) -> Bool {
        guard size > capacity else { return true }
        guard let (newPointer, newCapacity) = pool.take(atLeast: size) else { return false }
        if let pointer {
            newPointer.copyMemory(from: pointer, byteCount: count)
            pool.recycle(pointer, capacity: capacity)
        }
        pointer = newPointer
        capacity = newCapacity
        return true
    }

    /// Appends bytes, growing by doubling when no length was announced. False when out of memory.
    mutating func append(_ bytes: UnsafeRawPointer, count length: Int) -> Bool {
        if count + length > capacity, !reserve(max(count + length, 2 * capacity, 64 << 10)) { return false }
        (pointer! + count).copyMemory(from: bytes, byteCount: length)
        count += length
        return true
    }

    /// A copy of the bytes from `offset` on (all of them by default).
    func copy(from offset: Int = 0) -> Data {
        guard let pointer, count > offset else { return Data() }
        return Data(bytes: pointer + offset, count: count - offset)
    }

    /// The bytes as `Data` that returns the buffer to the pool when released; leaves this empty.
    mutating func take() -> Data {
        defer { pointer = nil; capacity = 0; count = 0 }
        guard let pointer else { return Data() }
        let pool = pool, capacity = capacity
        guard count > 0 else {
            pool.recycle(pointer, capacity: capacity)
            return Data()
        }
        return Data(
            bytesNoCopy: pointer, count: count,
            deallocator: .custom { pointer, _ in pool.recycle(pointer, capacity: capacity) })
    }

    /// Returns the memory to the pool (a transfer that ends without handing its body out).
    mutating func release() {
        if let pointer { pool.recycle(pointer, capacity: capacity) }
        pointer = nil
        capacity = 0
        count = 0
    }
}
