#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

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
    public static var currentBytes: Int { current.load(ordering: .relaxed) }
    public static var peakBytes: Int { peak.load(ordering: .relaxed) }
    public static func resetPeak() { peak.store(current.load(ordering: .relaxed), ordering: .relaxed) }

    private static let current = Atomic<Int>(0)
    private static let peak = Atomic<Int>(0)

    /// Allocates `byteCount` bytes; free them with ``deallocate(_:byteCount:)`` and the same count.
    static func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer? {
        guard let pointer = rawAllocate(byteCount: byteCount, alignment: alignment) else { return nil }
        let now = current.wrappingAdd(byteCount, ordering: .relaxed).newValue
        var seen = peak.load(ordering: .relaxed)
        while now > seen {
            let (exchanged, original) = peak.compareExchange(expected: seen, desired: now, ordering: .relaxed)
            if exchanged { break }
            seen = original
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
        current.wrappingSubtract(byteCount, ordering: .relaxed)
        free(pointer)
    }
}
