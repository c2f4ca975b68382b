import Foundation

/// Recycles the memory that response bodies are received into.
///
/// A body handed to a caller is `Data` over a pooled buffer whose deallocator gives the buffer
/// back here. The next transfer then writes into pages that are already mapped: a fresh
/// 100 KB `malloc` for every download costs page faults and kernel zeroing that, measured with
/// `make bench-net`, were a third of the downloader's CPU time on loopback. Idle memory is
/// bounded (``maxIdleBytes``); buffers are never shared between two live bodies.
final class BodyBufferPool: Sendable {
    private struct Idle {
        let pointer: UnsafeMutableRawPointer
        let capacity: Int
    }

    // Unsafe pointers are not Sendable; the pool owns every idle buffer exclusively.
    private struct Buffers: @unchecked Sendable {
        var idle: [Idle] = []
        var bytes = 0
    }

    /// Most memory kept for reuse; buffers beyond it are freed.
    let maxIdleBytes: Int
    /// Buffers larger than this are never kept.
    let maxPooledCapacity: Int
    private let buffers = Locked(Buffers())

    init(maxIdleBytes: Int = 16 << 20, maxPooledCapacity: Int = 4 << 20) {
        self.maxIdleBytes = maxIdleBytes
        self.maxPooledCapacity = maxPooledCapacity
    }

    deinit {
        buffers.withLock { buffers in for buffer in buffers.idle { free(buffer.pointer) } }
    }

    /// A buffer of at least `size` bytes: the smallest idle one that is not more than twice
    /// the size (so a small body never pins a big buffer), else a new one.
    func take(atLeast size: Int) -> (pointer: UnsafeMutableRawPointer, capacity: Int)? {
        let reused = buffers.withLock { buffers -> Idle? in
            var best: Int?
            for index in buffers.idle.indices {
                let capacity = buffers.idle[index].capacity
                guard capacity >= size, capacity <= max(2 * size, 64 << 10) else { continue }
                if best == nil || capacity < buffers.idle[best!].capacity { best = index }
            }
            guard let best else { return nil }
            let buffer = buffers.idle.remove(at: best)
            buffers.bytes -= buffer.capacity
            return buffer
        }
        if let reused { return (reused.pointer, reused.capacity) }
        let capacity = (max(size, 1) + 0x3FFF) & ~0x3FFF // whole 16 KiB steps
        guard let pointer = malloc(capacity) else { return nil }
        return (pointer, capacity)
    }

    /// Takes a buffer back (from any thread). The oldest idle buffers go when over budget.
    func recycle(_ pointer: UnsafeMutableRawPointer, capacity: Int) {
        guard capacity <= maxPooledCapacity else {
            free(pointer)
            return
        }
        let evicted = buffers.withLock { buffers -> [Idle] in
            buffers.idle.append(Idle(pointer: pointer, capacity: capacity))
            buffers.bytes += capacity
            var evicted: [Idle] = []
            while buffers.bytes > maxIdleBytes, !buffers.idle.isEmpty {
                let oldest = buffers.idle.removeFirst()
                buffers.bytes -= oldest.capacity
                evicted.append(oldest)
            }
            return evicted
        }
        for buffer in evicted { free(buffer.pointer) }
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

    /// A copy of the bytes so far.
    func copy() -> Data {
        guard let pointer, count > 0 else { return Data() }
        return Data(bytes: pointer, count: count)
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
        return Data(bytesNoCopy: pointer, count: count, deallocator: .custom { pointer, _ in pool.recycle(pointer, capacity: capacity) })
    }

    /// Returns the memory to the pool (a transfer that ends without handing its body out).
    mutating func release() {
        if let pointer { pool.recycle(pointer, capacity: capacity) }
        pointer = nil
        capacity = 0
        count = 0
    }
}
