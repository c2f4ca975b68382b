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
///
/// Animation frames made for playback are *mapped* instead (`mmap`): glibc serves blocks under
/// 32 MB from its heaps once one has been freed (its mmap threshold rises to the largest block
/// freed) and keeps freed blocks in each thread's arena, so playing a 1000×1000 animation — a
/// 4 MB frame made and dropped per frame, on two threads — held 90–170 MB resident for 12 MB of
/// live frames; mapped, 46 MB. A freed mapping is kept as a spare for the next frame of its size
/// (at most ``spareLimitCount`` spares and ``spareLimitBytes`` bytes, all process-wide): a fresh
/// mapping per frame faulted its pages in again and halved the frame rate.
/// ``releaseSpares()`` unmaps them. Stills keep malloc.
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

    /// Allocations of at least this many bytes may be mapped (see ``allocate(byteCount:alignment:mapped:)``).
    static let mappingThreshold = 1 << 20

    /// Allocates `byteCount` bytes; free them with ``deallocate(_:byteCount:mapped:)`` and the
    /// same count and `mapped`. With `mapped` (honoured from ``mappingThreshold`` bytes, on
    /// Linux) the memory is a private mapping of its own, returned to the system when freed.
    static func allocate(byteCount: Int, alignment: Int, mapped: Bool = false) -> UnsafeMutableRawPointer? {
        let pointer: UnsafeMutableRawPointer?
        if isMapped(byteCount, mapped) {
            pointer = mapAligned(byteCount: byteCount)
        } else {
            pointer = rawAllocate(byteCount: byteCount, alignment: alignment)
        }
        guard let pointer else { return nil }
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

    static func deallocate(_ pointer: UnsafeMutableRawPointer, byteCount: Int, mapped: Bool = false) {
        usage.withLock { $0.current -= byteCount }
        #if os(Linux)
        if isMapped(byteCount, mapped) {
            let length = mappedLength(byteCount)
            let kept = spares.withLock { spares in
                guard spares.count < spareLimitCount,
                      spares.reduce(length, { $0 + $1.length }) <= spareLimitBytes else { return false }
                spares.append((UInt(bitPattern: pointer), length))
                return true
            }
            if !kept { munmap(pointer, length) }
            return
        }
        #endif
        free(pointer)
    }

    /// Freed mappings kept for reuse: at most this many …
    static let spareLimitCount = 4
    /// … holding at most this many bytes together.
    static let spareLimitBytes = 32 << 20
    private static let spares = Locked<[(address: UInt, length: Int)]>([])

    /// Unmaps the spare mappings kept for reuse (memory pressure; ``AnimatedImage/trim()``).
    static func releaseSpares() {
        let released = spares.withLock { spares in defer { spares.removeAll() }; return spares }
        #if os(Linux)
        for spare in released { munmap(UnsafeMutableRawPointer(bitPattern: spare.address), spare.length) }
        #endif
    }

    private static func isMapped(_ byteCount: Int, _ mapped: Bool) -> Bool {
        #if os(Linux)
        return mapped && byteCount >= mappingThreshold
        #else
        return false
        #endif
    }

    private static func mappedLength(_ byteCount: Int) -> Int {
        let page = 4096
        return (byteCount + page - 1) / page * page
    }

    /// `byteCount` bytes of fresh anonymous memory, on a huge-page boundary when large enough
    /// for the advice: a mapping one huge page longer, the slack around the boundary unmapped.
    private static func mapAligned(byteCount: Int) -> UnsafeMutableRawPointer? {
        #if os(Linux)
        let length = mappedLength(byteCount)
        let reused = spares.withLock { spares -> UInt? in
            guard let index = spares.firstIndex(where: { $0.length == length }) else { return nil }
            return spares.remove(at: index).address
        }
        if let reused { return UnsafeMutableRawPointer(bitPattern: reused) }
        let align = byteCount >= hugePageSize ? hugePageSize : 4096
        let (padded, overflow) = length.addingReportingOverflow(align - 4096)
        guard !overflow else { return nil }
        guard let mapped = mmap(nil, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapped != MAP_FAILED else { return nil }
        let address = UInt(bitPattern: mapped)
        let head = Int((address + UInt(align) - 1) & ~UInt(align - 1) - address)
        if head > 0 { munmap(mapped, head) }
        let start = mapped + head
        let tail = padded - head - length
        if tail > 0 { munmap(start + length, tail) }
        // Advice only: without THP (or with it off) the kernel ignores it.
        if byteCount >= hugePageSize { _ = madvise(start, length, MADV_HUGEPAGE) }
        return start
        #else
        return nil
        #endif
    }
}
