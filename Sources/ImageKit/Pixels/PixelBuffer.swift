/// A uniquely owned, mutable RGBA8 allocation that a decoder writes into.
///
/// The memory is not zero-filled (decoders overwrite every byte; zeroing a 48 MB buffer costs as
/// much as a fast decode); call ``clear()`` when a decoder may leave parts unwritten. Freeze it
/// with ``freeze(isOpaque:)`` to get an immutable, shareable ``Bitmap`` without a copy.
///
/// ```swift
/// var buffer = try PixelBuffer(width: 640, height: 480)
/// buffer.clear()
/// let bitmap = buffer.freeze(isOpaque: false)
/// ```
public struct PixelBuffer: ~Copyable {
    /// The width in pixels.
    public let width: Int
    /// The height in pixels.
    public let height: Int
    /// Bytes from one row to the next, at least `width * 4`.
    public let bytesPerRow: Int
    /// The first byte of the first row.
    public let baseAddress: UnsafeMutableRawPointer
    /// Bytes from the start of the allocation to ``baseAddress`` (see ``Placement``).
    let allocationOffset: Int

    /// Rows are 64-byte aligned so that vector code and the C libraries see aligned rows; the
    /// padding costs at most 60 bytes per row.
    static let rowAlignment = 64

    /// Allocates uninitialised memory for `width × height` RGBA8 pixels.
    /// - Throws: ``ImageError/Code/zeroPixels`` for an empty size, ``ImageError/Code/internalError``
    ///   when the size overflows.
    public init(width: Int, height: Int) throws(ImageError) {
        try self.init(width: width, height: height, placement: .cacheLine)
    }

    /// Where the first byte of a buffer lies against the 64-byte lines rows are aligned to.
    enum Placement {
        /// On a line's start (rows of a multiple of 64 bytes all are).
        case cacheLine
        /// 16 bytes past a line's start, for libjpeg-turbo to write into: its AVX2 colour
        /// converters write 32-byte-aligned rows with non-temporal stores, which bypass the
        /// cache, so the pixels a thumbnail resamples next would come back from memory (a
        /// 64×64 decode takes 1.3× as long, a 256×256 one 1.1×; no size gains from them).
        case pastCacheLine

        var offset: Int { self == .cacheLine ? 0 : 16 }
    }

    init(width: Int, height: Int, placement: Placement) throws(ImageError) {
        guard width > 0, height > 0 else {
            throw ImageError(.zeroPixels, "an image of \(width)×\(height) pixels has no pixels")
        }
        let (rowBytes, rowOverflow) = width.multipliedReportingOverflow(by: 4)
        let alignedRow = (rowBytes + Self.rowAlignment - 1) / Self.rowAlignment * Self.rowAlignment
        // Tightly packed rows when they are already a multiple of 16 bytes (most widths), so
        // that packed callers (hashing, encoders) need no repacking.
        let stride = rowBytes % 16 == 0 ? rowBytes : alignedRow
        let (total, overflow) = stride.multipliedReportingOverflow(by: height)
        guard !rowOverflow, !overflow, total <= Int.max - 64 else {
            throw ImageError(.internalError, "\(width)×\(height) pixels overflow the address space")
        }
        let offset = placement.offset
        guard let memory = PixelMemory.allocate(byteCount: total + offset, alignment: Self.rowAlignment) else {
            throw ImageError(.internalError, "out of memory for \(width)×\(height) pixels")
        }
        self.width = width
        self.height = height
        self.bytesPerRow = stride
        self.baseAddress = memory + offset
        self.allocationOffset = offset
    }

    /// Takes ownership of memory allocated with ``allocate(width:height:)``.
    init(adopting baseAddress: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int) {
        self.baseAddress = baseAddress
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.allocationOffset = 0
    }

    /// Allocates storage the way ``init(width:height:)`` does, for C code that asks for memory
    /// through a callback; hand the result back with ``init(adopting:width:height:bytesPerRow:)``.
    static func allocate(width: Int, height: Int) throws(ImageError) -> (UnsafeMutableRawPointer, bytesPerRow: Int) {
        let buffer = try PixelBuffer(width: width, height: height)
        let result = (buffer.baseAddress, bytesPerRow: buffer.bytesPerRow)
        buffer.relinquish()
        return result
    }

    private consuming func relinquish() {
        discard self
    }

    /// The number of bytes allocated.
    public var byteCount: Int { bytesPerRow * height }

    /// Sets every byte to zero (transparent black).
    public mutating func clear() {
        baseAddress.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
    }

    /// The first byte of row `y`.
    @inlinable
    public func row(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        (baseAddress + y * bytesPerRow).assumingMemoryBound(to: UInt8.self)
    }

    /// Copies `bitmap`'s pixels in (same size).
    public mutating func copyPixels(from bitmap: Bitmap) {
        precondition(bitmap.width == width && bitmap.height == height)
        if bitmap.bytesPerRow == bytesPerRow {
            baseAddress.copyMemory(from: bitmap.baseAddress, byteCount: byteCount)
        } else {
            for y in 0..<height {
                (baseAddress + y * bytesPerRow).copyMemory(
                    from: bitmap.baseAddress + y * bitmap.bytesPerRow, byteCount: width * 4)
            }
        }
    }

    /// Hands the memory to an immutable ``Bitmap`` without copying it.
    public consuming func freeze(isOpaque: Bool) -> Bitmap {
        let bitmap = Bitmap(
            adopting: baseAddress, width: width, height: height,
            bytesPerRow: bytesPerRow, isOpaque: isOpaque, allocationOffset: allocationOffset)
        discard self
        return bitmap
    }

    deinit {
        PixelMemory.deallocate(baseAddress - allocationOffset, byteCount: byteCount + allocationOffset)
    }
}
