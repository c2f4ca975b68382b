/// An immutable RGBA8 image, straight (non-premultiplied) alpha, shared by reference.
///
/// Rows may be padded: `bytesPerRow >= width * 4`. The memory cache, results and callers share
/// one allocation; nothing mutates it after ``PixelBuffer/freeze(isOpaque:)``.
public final class Bitmap: @unchecked Sendable {
    // Invariant that makes the @unchecked Sendable sound: `baseAddress` is written only before
    // `init(adopting:)` (by the PixelBuffer that owned it) and never after, so concurrent reads
    // are safe; the class frees it exactly once, in deinit.
    /// The width in pixels.
    public let width: Int
    /// The height in pixels.
    public let height: Int
    /// Bytes from one row to the next (at least `width × 4`).
    public let bytesPerRow: Int
    /// True when every pixel's alpha is 255 (known from the format, or checked).
    public let isOpaque: Bool
    let baseAddress: UnsafeMutableRawPointer
    /// Bytes from the start of the allocation to `baseAddress` (``PixelBuffer/Placement``).
    private let allocationOffset: Int

    init(
        adopting baseAddress: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int, isOpaque: Bool,
        allocationOffset: Int = 0
    ) {
        self.baseAddress = baseAddress
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.isOpaque = isOpaque
        self.allocationOffset = allocationOffset
    }

    deinit {
        PixelMemory.deallocate(baseAddress - allocationOffset, byteCount: bytesPerRow * height + allocationOffset)
    }

    /// Width and height.
    var size: PixelSize { PixelSize(width: width, height: height) }

    /// The bytes held: `bytesPerRow × height`.
    public var byteCount: Int { bytesPerRow * height }

    /// Calls `body` with every byte of the bitmap (rows of `bytesPerRow` bytes, top row first).
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: baseAddress, count: byteCount))
    }

    /// Row `y` as `width * 4` bytes.
    public func withRow<Result>(_ y: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        precondition(y >= 0 && y < height, "row \(y) is outside 0..<\(height)")
        let start = (baseAddress + y * bytesPerRow).assumingMemoryBound(to: UInt8.self)
        return try body(UnsafeBufferPointer(start: start, count: width * 4))
    }

    /// The pixel at (`x`, `y`) as (r, g, b, a).
    public subscript(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) is outside the bitmap")
        let pixel = (baseAddress + y * bytesPerRow + x * 4).assumingMemoryBound(to: UInt8.self)
        return (pixel[0], pixel[1], pixel[2], pixel[3])
    }

    /// The pixels as tightly packed RGBA8 rows (`width * 4` bytes per row, no padding).
    ///
    /// With `clearingTransparent`, every pixel whose alpha is 0 comes out as 0,0,0,0 (its
    /// colour has no meaning): the rule the corpus manifest's `ref_sha256` uses.
    public func packedRGBA(clearingTransparent: Bool = false) -> [UInt8] {
        let rowBytes = width * 4
        return [UInt8](unsafeUninitializedCapacity: rowBytes * height) { output, initialized in
            for y in 0..<height {
                let source = baseAddress + y * bytesPerRow
                let destination = output.baseAddress! + y * rowBytes
                UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: rowBytes)
                if clearingTransparent && !isOpaque {
                    var x = 0
                    while x < rowBytes {
                        if destination[x + 3] == 0 {
                            destination[x] = 0
                            destination[x + 1] = 0
                            destination[x + 2] = 0
                        }
                        x += 4
                    }
                }
            }
            initialized = rowBytes * height
        }
    }

    /// Whether every pixel's alpha is 255 (scans unless ``isOpaque`` already says so).
    public func scanIsOpaque() -> Bool {
        if isOpaque { return true }
        for y in 0..<height {
            let row = (baseAddress + y * bytesPerRow).assumingMemoryBound(to: UInt8.self)
            var x = 3
            while x < width * 4 {
                if row[x] != 255 { return false }
                x += 4
            }
        }
        return true
    }
}
