#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where pixel memory comes from.
///
/// A fresh 48 MB bitmap costs about 12 000 page faults on first touch — about a third of a
/// 4000×3000 JPEG decode (measured: 110 ms into fresh malloc memory, 76 ms into a reused
/// buffer). Large buffers are therefore 2 MiB-aligned and advised as transparent huge pages,
/// which brings the same decode to about 83 ms without keeping a pool of idle buffers alive.
/// Memory is never zero-filled here: decoders overwrite it.
public enum PixelMemory {
    /// Buffers at least this large get huge-page advice (two huge pages).
    static let hugePageThreshold = 4 << 20
    static let hugePageSize = 2 << 20

    /// Bytes of pixel memory allocated now, and the most at any moment since the last
    /// ``resetPeak()``: how the benchmark measures a decode's peak pixel memory.
    public static var currentBytes: Int { usage.withLock { $0.current } }
    public static var peakBytes: Int { usage.withLock { $0.peak } }
    public static func resetPeak() { usage.withLock { $0.peak = $0.current } }

    // A lock, not atomics: Swift 6.3 crashes compiling Atomic read-modify-write operations
    // under --sanitize=thread ("Invalid bitcast"). An uncontended pthread lock is ~20 ns.
    private static let usage = Locked<(current: Int, peak: Int)>((0, 0))

    /// Allocates `byteCount` bytes; free them with ``deallocate(_:byteCount:)`` and the same count.
    static func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer? {
        guard let pointer = rawAllocate(byteCount: byteCount, alignment: alignment) else { return nil }
        usage.withLock { usage in
            usage.current += byteCount
            usage.peak = max(usage.peak, usage.current)
        }
        return pointer
    }

    private static func rawAllocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer? {
        var pointer: UnsafeMutableRawPointer?
        let align = byteCount >= hugePageThreshold ? hugePageSize : alignment
        guard posix_memalign(&pointer, align, max(byteCount, 1)) == 0, let pointer else { return nil }
        #if os(Linux)
        if byteCount >= hugePageThreshold {
            // Advice only: without THP (or with it off) the kernel ignores it.
            _ = madvise(pointer, byteCount, MADV_HUGEPAGE)
        }
        #endif
        return pointer
    }

    static func deallocate(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        usage.withLock { $0.current -= byteCount }
        free(pointer)
    }
}
