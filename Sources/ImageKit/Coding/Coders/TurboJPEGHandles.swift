internal import CTurboJPEG
import Foundation

/// Owns one `tjhandle`. Decompressors are pooled: creating one allocates libjpeg's state, which
/// costs as much as decoding a small thumbnail.
final class TurboJPEGHandle: @unchecked Sendable {
    // Invariant for @unchecked Sendable: a handle is used by one thread at a time — it is either
    // in the pool (touched only under the pool's lock) or checked out by exactly one decode.
    let raw: tjhandle

    private init(raw: tjhandle) { self.raw = raw }
    deinit { tjDestroy(raw) }

    private static let pool = Locked<[TurboJPEGHandle]>([])
    private static let poolLimit = 16

    static func decompressor() throws(ImageError) -> TurboJPEGHandle {
        if let pooled = pool.withLock({ $0.popLast() }) { return pooled }
        guard let raw = tjInitDecompress() else { throw ImageError(.internalError, "tjInitDecompress failed") }
        return TurboJPEGHandle(raw: raw)
    }

    static func recycle(_ handle: TurboJPEGHandle) {
        pool.withLock { pool in
            if pool.count < poolLimit { pool.append(handle) }
        }
    }

    var errorMessage: String {
        guard let message = tjGetErrorStr2(raw) else { return "unknown libturbojpeg error" }
        return String(cString: message)
    }
}

/// Owns one TurboJPEG compressor and the buffer it writes JPEGs into; both are pooled. Left to
/// itself, libjpeg starts each JPEG in a 4 KB buffer and doubles it (a copy each time) into fresh
/// memory whose pages fault in on every encode: a fifth of a 1024×768 encode's time. A pooled
/// buffer of TurboJPEG's worst-case size for the image (`tjBufSize`) is written in place with
/// `TJFLAG_NOREALLOC`; only the pages a JPEG actually fills are ever touched.
final class TurboJPEGCompressor: @unchecked Sendable {
    // Invariant for @unchecked Sendable: as for TurboJPEGHandle — in the pool (under its lock) or
    // checked out by exactly one encode.
    private var raw: tjhandle
    private var buffer: UnsafeMutablePointer<UInt8>?
    private var capacity = 0
    /// TurboJPEG 2.1 keeps a progressive encode's scan script in the handle, and a later
    /// baseline encode with it wrote garbled pictures: such a compressor goes back to the pool
    /// with a new handle (its buffer kept).
    private var wroteProgressive = false

    /// The largest buffer kept (TurboJPEG's worst case for about 2.7 MP at 4:2:0); a larger
    /// image is encoded into memory libjpeg allocates for that encode alone.
    static let bufferLimit = 8 << 20
    private static let pool = Locked<[TurboJPEGCompressor]>([])
    private static let poolLimit = 16

    private init(raw: tjhandle) { self.raw = raw }
    deinit {
        if let buffer { tjFree(buffer) }
        tjDestroy(raw)
    }

    /// A pooled compressor, or a new one.
    static func checkOut() throws(ImageError) -> TurboJPEGCompressor {
        if let pooled = pool.withLock({ $0.popLast() }) { return pooled }
        guard let raw = tjInitCompress() else { throw ImageError(.internalError, "tjInitCompress failed") }
        return TurboJPEGCompressor(raw: raw)
    }

    /// Back into the pool; one that wrote a progressive JPEG gets a new handle first (dropped
    /// if TurboJPEG cannot make one).
    static func recycle(_ compressor: TurboJPEGCompressor) {
        if compressor.wroteProgressive {
            guard let fresh = tjInitCompress() else { return }
            tjDestroy(compressor.raw)
            compressor.raw = fresh
            compressor.wroteProgressive = false
        }
        pool.withLock { pool in
            if pool.count < poolLimit { pool.append(compressor) }
        }
    }

    /// Frees the pooled compressors and their buffers (``MemoryCache/trim(toCost:)`` and memory
    /// pressure call this, as they unmap pixel memory's spares).
    static func releasePooled() {
        let released = pool.withLock { pool in
            defer { pool.removeAll() }
            return pool
        }
        _ = released  // freed here, outside the lock
    }

    /// Compressors waiting in the pool now.
    static var pooledCount: Int { pool.withLock { $0.count } }

    /// TurboJPEG's bound on a 4:2:0 JPEG of this size (`tjBufSize`), in bytes; 0 when too large.
    static func worstCaseSize(width: Int, height: Int) -> Int {
        max(0, Int(truncatingIfNeeded: tjBufSize(Int32(width), Int32(height), Int32(TJSAMP_420.rawValue))))
    }

    /// RGBA pixels as a 4:2:0 JPEG.
    func compress(
        _ pixels: UnsafePointer<UInt8>, width: Int, bytesPerRow: Int, height: Int, quality: Int32, flags: Int32
    ) throws(ImageError) -> Data {
        if flags & TJFLAG_PROGRESSIVE != 0 { wroteProgressive = true }
        let worstCase = Self.worstCaseSize(width: width, height: height)
        if worstCase > 0, worstCase <= Self.bufferLimit {
            if capacity < worstCase {
                if let buffer { tjFree(buffer) }
                buffer = tjAlloc(Int32(worstCase))
                capacity = buffer == nil ? 0 : worstCase
            }
            if let buffer {
                var output: UnsafeMutablePointer<UInt8>? = buffer
                var size = UInt(capacity)
                let status = tjCompress2(
                    raw, pixels, Int32(width), Int32(bytesPerRow), Int32(height), Int32(TJPF_RGBA.rawValue), &output,
                    &size, Int32(TJSAMP_420.rawValue), quality, flags | TJFLAG_NOREALLOC)
                guard status == 0, output == buffer else { throw ImageError(.encodingFailed, "JPEG: \(errorMessage)") }
                return Data(bytes: buffer, count: Int(size))
            }
        }
        var output: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let status = tjCompress2(
            raw, pixels, Int32(width), Int32(bytesPerRow), Int32(height), Int32(TJPF_RGBA.rawValue), &output, &size,
            Int32(TJSAMP_420.rawValue), quality, flags)
        defer { if let output { tjFree(output) } }
        guard status == 0, let output else { throw ImageError(.encodingFailed, "JPEG: \(errorMessage)") }
        return Data(bytes: output, count: Int(size))
    }

    private var errorMessage: String {
        guard let message = tjGetErrorStr2(raw) else { return "unknown libturbojpeg error" }
        return String(cString: message)
    }
}
