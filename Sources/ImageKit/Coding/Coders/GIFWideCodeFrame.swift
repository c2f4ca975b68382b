import CGIF
import Foundation

/// A frame whose LZW minimum code size is 9 to 11: legal for browsers (and pygif's
/// `max-codes.gif`), refused by giflib's decoder setup. Its data is decoded here.
struct WideCodeFrame {
    let codeSize: Int
    /// The frame's LZW data, sub-blocks joined.
    let data: [UInt8]
    /// Where the next record starts.
    let end: Int

    /// Reads the frame whose descriptor fields start at `offset` (after the 0x2C); nil unless
    /// its code size is in `codeSizes` (the ones giflib refuses, by default) and its data is
    /// complete.
    init?(_ bytes: UnsafeRawBufferPointer, descriptorAt offset: Int, codeSizes: ClosedRange<Int> = 9...11) {
        guard offset + 9 < bytes.count else { return nil }
        let flags = bytes[offset + 8]
        var cursor = offset + 9
        if flags & 0x80 != 0 { cursor += 3 << (Int(flags & 0x07) + 1) }
        guard cursor < bytes.count, codeSizes.contains(Int(bytes[cursor])) else { return nil }
        codeSize = Int(bytes[cursor])
        cursor += 1
        var data: [UInt8] = []
        while true {
            guard cursor < bytes.count else { return nil }
            let length = Int(bytes[cursor])
            cursor += 1
            if length == 0 { break }
            guard cursor + length <= bytes.count else { return nil }
            data.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[cursor..<cursor + length]))
            cursor += length
        }
        self.data = data
        end = cursor
    }

    /// The frame's palette indices (GIF's LZW: clear and end codes, codes up to 12 bits; a full
    /// table without a clear code keeps being used, as browsers do).
    func decode(pixelCount: Int) throws(ImageError) -> [UInt8] {
        let clear = 1 << codeSize, endCode = clear + 1
        var prefix = [Int](repeating: 0, count: 4096)
        var suffix = [Int](repeating: 0, count: 4096)
        var first = [Int](repeating: 0, count: 4096)
        for code in 0..<clear { suffix[code] = code; first[code] = code }
        var output: [UInt8] = []
        output.reserveCapacity(pixelCount)
        var stack: [Int] = []
        var width = codeSize + 1, next = clear + 2, previous = -1
        var bits = 0, bitCount = 0, position = 0
        decoding: while output.count < pixelCount {
            while bitCount < width {
                guard position < data.count else { break decoding }
                bits |= Int(data[position]) << bitCount
                bitCount += 8
                position += 1
            }
            let code = bits & ((1 << width) - 1)
            bits >>= width
            bitCount -= width
            if code == clear {
                width = codeSize + 1
                next = clear + 2
                previous = -1
                continue
            }
            if code == endCode { break }
            guard code <= next, code < 4096, previous >= 0 || code < clear else {
                throw ImageError(.badImageData, "GIF: LZW code \(code) is out of range")
            }
            // The string of `code` (for code == next: previous's string plus its first value).
            var walk = code == next ? previous : code
            stack.removeAll(keepingCapacity: true)
            if code == next { stack.append(first[previous]) }
            while walk >= clear + 2 {
                stack.append(suffix[walk])
                walk = prefix[walk]
            }
            stack.append(walk)
            for value in stack.reversed() {
                guard value < 256 else { throw ImageError(.badImageData, "GIF: palette index \(value) is over 255") }
                output.append(UInt8(value))
            }
            if previous >= 0 && next < 4096 {
                prefix[next] = previous
                suffix[next] = code == next ? first[previous] : first[code]
                first[next] = first[previous]
                next += 1
                if next == 1 << width && width < 12 { width += 1 }
            }
            previous = code
        }
        guard output.count >= pixelCount else {
            throw ImageError(.truncatedData, "GIF: the wide-code frame's data ends after \(output.count) of \(pixelCount) pixels")
        }
        return Array(output.prefix(pixelCount))
    }
}
