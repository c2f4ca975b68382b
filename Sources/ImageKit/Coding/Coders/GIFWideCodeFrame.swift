import Foundation

/// A frame whose LZW minimum code size is 9 to 11: legal for browsers (and pygif's
/// `max-codes.gif`), refused by giflib's decoder setup. Its data is decoded with the browsers'
/// rules (`ik_gif_lzw_decode`, strict).
struct WideCodeFrame {
    let codeSize: Int

    /// The frame whose descriptor fields start at `offset` (after the 0x2C); nil unless its
    /// code size is in `codeSizes` (the ones giflib refuses, by default) and its data is complete.
    init?(_ bytes: UnsafeRawBufferPointer, descriptorAt offset: Int, codeSizes: ClosedRange<Int> = 9...11) {
        var cursor = GIFStructure.imageDataOffset(bytes, descriptorAt: offset)
        guard cursor < bytes.count, codeSizes.contains(Int(bytes[cursor])) else { return nil }
        codeSize = Int(bytes[cursor])
        cursor += 1
        while true {
            guard cursor < bytes.count else { return nil }
            let length = Int(bytes[cursor])
            cursor += 1
            if length == 0 { break }
            guard cursor + length <= bytes.count else { return nil }
            cursor += length
        }
    }
}
