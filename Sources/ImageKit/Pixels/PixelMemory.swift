#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where pixel memory comes from.
///
/// Buffers of at least `mappingThreshold` bytes (128 KiB: a 181×181 bitmap, glibc's own mmap
/// threshold) are private mappings of their own (`mmap`), 2 MiB-aligned and advised as
/// transparent huge pages from two huge pages up; smaller ones come from malloc. Memory is never
/// zero-filled here: decoders overwrite it.
///
/// A freed mapping is kept as a *spare* for the next buffer of about its size (at most
/// `spareLimitCount` spares and `spareLimitBytes` bytes, process-wide, the oldest dropped
/// first, each for at most `spareLifetime` seconds): fresh memory is what large images cost most,
/// since the kernel zero-fills every page on first touch, and mappings (not malloc's heaps) keep a
/// played animation's memory bounded. The measurements behind these choices are in the Decisions
/// article ("Pixel memory").
/// ``releaseSpares()`` unmaps the spares at once (the memory cache's trim calls it).
public enum PixelMemory {
    /// Buffers at least this large get huge-page advice (two huge pages).
    static let hugePageThreshold = 4 << 20
    static let hugePageSize = 2 << 20

    /// Bytes of pixel memory allocated now, and the most at any moment since the last
    /// ``resetPeak()``: how the benchmark measures a decode's peak pixel memory.
    public static var currentBytes: Int { usage.withLock { $0.current } }
    /// The most pixel memory in use at once since the last `resetPeak()`, in bytes.
    public static var peakBytes: Int { usage.withLock { $0.peak } }
    /// Starts a new peak measurement from the memory in use now.
    public static func resetPeak() { usage.withLock { $0.peak = $0.current } }

    // A lock, not atomics: Swift 6.3 crashes compiling Atomic read-modify-write operations
    // under --sanitize=thread ("Invalid bitcast"). An uncontended pthread lock is ~20 ns.
    private static let usage = Locked<(current: Int, peak: Int)>((0, 0))

    /// Allocations of at least this many bytes are mapped (on Linux).
    static let mappingThreshold = 128 << 10

    /// Allocates `byteCount` bytes; free them with ``deallocate(_:byteCount:)`` and the same
    /// count. From ``mappingThreshold`` bytes on Linux the memory is a private mapping (a spare
    /// one when there is one of about the size), kept as a spare or unmapped when freed.
    static func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer? {
        let pointer: UnsafeMutableRawPointer?
        if isMapped(byteCount) {
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

    static func deallocate(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        usage.withLock { $0.current -= byteCount }
        #if os(Linux)
        if isMapped(byteCount) {
            // The mapping starts at the page boundary below (the offset is less than a page) and
            // its length is written there (a reused spare may be longer than `byteCount` needs).
            let pointer = UnsafeMutableRawPointer(bitPattern: UInt(bitPattern: pointer) & ~UInt(4095))!
            let length = pointer.load(as: Int.self)
            let now = monotonicSeconds()
            let (kept, dropped) = spares.withLock { spares -> (Bool, [Spare]) in
                var dropped = spares.removeExpired(now: now)
                guard length <= spareLimitBytes else { return (false, dropped) }
                // The newest spare is the likeliest to be asked for again: the oldest make room.
                spares.append(Spare(address: UInt(bitPattern: pointer), length: length, freedAt: now))
                var total = spares.reduce(0) { $0 + $1.length }
                while spares.count > spareLimitCount || total > spareLimitBytes {
                    let oldest = spares.removeFirst()
                    total -= oldest.length
                    dropped.append(oldest)
                }
                return (true, dropped)
            }
            unmap(dropped)
            if !kept { munmap(pointer, length) }
            return
        }
        #endif
        free(pointer)
    }

    /// Freed mappings kept for reuse: at most this many (the frames of a small animation) …
    static let spareLimitCount = 64
    /// … holding at most this many bytes together (one 12 MP bitmap and change) …
    static let spareLimitBytes = 64 << 20
    /// … for at most this many seconds (checked whenever pixel memory is allocated or freed).
    static let spareLifetime = 10.0
    /// A spare serves a request up to this factor smaller than itself, whole: a spare trimmed to
    /// each request would shrink until the next slightly larger image missed them all.
    static let spareReuseFactor = 1.5

    struct Spare {
        var address: UInt
        var length: Int
        var freedAt: Double
    }
    private static let spares = Locked<[Spare]>([])

    /// Unmaps the spare mappings kept for reuse (memory pressure, ``MemoryCache/trim(toCost:)``,
    /// ``AnimatedImage/trim()``).
    public static func releaseSpares() {
        let released = spares.withLock { spares in
            defer { spares.removeAll() }; return spares
        }
        unmap(released)
    }

    /// Bytes held by spare mappings now.
    public static var spareBytes: Int { spares.withLock { $0.reduce(0) { $0 + $1.length } } }

    private static func unmap(_ released: [Spare]) {
        #if os(Linux)
        for spare in released { munmap(UnsafeMutableRawPointer(bitPattern: spare.address), spare.length) }
        #endif
    }

    private static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    private static func isMapped(_ byteCount: Int) -> Bool {
        #if os(Linux)
        return byteCount >= mappingThreshold
        #else
        return false
        #endif
    }

    /// The mapping for `byteCount` bytes, with room for the largest ``colourOffset(_:)``, rounded
    /// up to an eighth of its power of two (at most 12.5 % more address space, and no more
    /// memory until touched): images of about one size then share a few lengths, so a freed one
    /// serves the next even when it is a little larger.
    static func mappedLength(_ byteCount: Int) -> Int {
        let page = 4096
        let needed = (byteCount + colourSpan + page - 1) / page * page
        let step = max(page, 1 << max(0, Int.bitWidth - needed.leadingZeroBitCount - 4))
        return (needed + step - 1) / step * step
    }

    /// Buffers start this many bytes into their mapping at most …
    private static let colourSpan = 4096 - 64
    /// … at a multiple of 64 that changes from one allocation to the next, never 0 (the
    /// mapping's length is kept in its first bytes). Every mapping starts
    /// on a 2 MiB boundary, so without this a source and the buffer made from it share their
    /// addresses' low 12 bits, and loads from one falsely wait on stores to the other (4K
    /// aliasing).
    private static let colour = Locked(0)

    private static func colourOffset() -> Int {
        colour.withLock { value in
            value = (value + 23) % 63
            return (value + 1) * 64
        }
    }

    /// `byteCount` bytes of fresh anonymous memory, on a huge-page boundary when large enough
    /// for the advice: a mapping one huge page longer, the slack around the boundary unmapped.
    private static func mapAligned(byteCount: Int) -> UnsafeMutableRawPointer? {
        #if os(Linux)
        let length = mappedLength(byteCount)
        let now = monotonicSeconds()
        let (reused, expired) = spares.withLock { spares -> (Spare?, [Spare]) in
            let expired = spares.removeExpired(now: now)
            // The smallest spare that is large enough, and not wastefully so.
            var best: Int?
            for index in spares.indices
            where spares[index].length >= length && Double(spares[index].length) <= Double(length) * spareReuseFactor {
                if best.map({ spares[index].length < spares[$0].length }) ?? true { best = index }
            }
            guard let best else { return (nil, expired) }
            return (spares.remove(at: best), expired)
        }
        unmap(expired)
        if let reused {
            let start = UnsafeMutableRawPointer(bitPattern: reused.address)!
            start.storeBytes(of: reused.length, as: Int.self)
            return start + colourOffset()
        }
        let align = byteCount >= hugePageSize ? hugePageSize : 4096
        let (padded, overflow) = length.addingReportingOverflow(align - 4096)
        guard !overflow else { return nil }
        guard let mapped = mmap(nil, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            mapped != MAP_FAILED
        else { return nil }
        let address = UInt(bitPattern: mapped)
        let head = Int((address + UInt(align) - 1) & ~UInt(align - 1) - address)
        if head > 0 { munmap(mapped, head) }
        let start = mapped + head
        let tail = padded - head - length
        if tail > 0 { munmap(start + length, tail) }
        // Advice only: without THP (or with it off) the kernel ignores it.
        if byteCount >= hugePageSize { _ = madvise(start, length, MADV_HUGEPAGE) }
        // Not populated up front with MADV_POPULATE_WRITE: alone that writes a fresh 256×192
        // bitmap in 88–126 µs instead of 123–170 (`bench --filter pixel-memory`), but bench-net's
        // pipeline, which keeps its thumbnails, showed no gain beyond its run-to-run spread, and
        // the advice faults pages in under the address space's lock, which other threads' mmap
        // and munmap then wait for.
        start.storeBytes(of: length, as: Int.self)
        return start + colourOffset()
        #else
        return nil
        #endif
    }
}

private extension Array where Element == PixelMemory.Spare {
    /// Removes and returns the spares freed more than ``PixelMemory/spareLifetime`` ago.
    mutating func removeExpired(now: Double) -> [PixelMemory.Spare] {
        guard contains(where: { now - $0.freedAt > PixelMemory.spareLifetime }) else { return [] }
        let expired = filter { now - $0.freedAt > PixelMemory.spareLifetime }
        removeAll { now - $0.freedAt > PixelMemory.spareLifetime }
        return expired
    }
}
