internal import CGIF
import Foundation

/// The block structure of a GIF, walked without decoding any image data.
enum GIFStructure {
    /// A frame's display time: delays of 10 ms or less become 100 ms, as browsers do.
    static func duration(centiseconds: Int) -> Double {
        centiseconds <= 1 ? 0.1 : Double(centiseconds) / 100
    }

    /// The screen size, the durations of the frames and the loop count, read from the blocks
    /// alone (the same rules as a decode: a byte that starts no record is skipped, the end of
    /// the data ends the image; one frame: duration 0, loop count 1).
    static func animationInfo(_ bytes: UnsafeRawBufferPointer) -> (
        screen: PixelSize, durations: [Double], loopCount: Int
    )? {
        guard bytes.count >= 13 else { return nil }
        let screen = PixelSize(width: Int(bytes[6]) | Int(bytes[7]) << 8, height: Int(bytes[8]) | Int(bytes[9]) << 8)
        var offset = 13
        if bytes[10] & 0x80 != 0 { offset += 3 << (Int(bytes[10] & 0x07) + 1) }
        var durations: [Double] = []
        var delay = 0
        var loopCount: Int?
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x21:
                guard offset + 2 < bytes.count else { offset = bytes.count; break }
                let label = bytes[offset + 1]
                let first = offset + 2
                if label == 0xF9, first + 4 < bytes.count, bytes[first] >= 4 {
                    delay = Int(bytes[first + 2]) | Int(bytes[first + 3]) << 8
                } else if label == 0xFF, loopCount == nil, first + 12 + 4 < bytes.count, bytes[first] == 11 {
                    let name = String(
                        decoding: UnsafeRawBufferPointer(rebasing: bytes[first + 1..<first + 12]), as: UTF8.self)
                    let sub = first + 12
                    if name == "NETSCAPE2.0" || name == "ANIMEXTS1.0", bytes[sub] >= 3, bytes[sub + 1] == 1 {
                        loopCount = Int(bytes[sub + 2]) | Int(bytes[sub + 3]) << 8
                    }
                }
                offset = skipSubBlocks(bytes, first)
            case 0x2C:
                guard offset + 10 <= bytes.count else { offset = bytes.count; break }
                durations.append(duration(centiseconds: delay))
                delay = 0
                let flags = bytes[offset + 9]
                offset += 10
                if flags & 0x80 != 0 { offset += 3 << (Int(flags & 0x07) + 1) }
                offset = skipSubBlocks(bytes, offset + 1)
            case 0x3B:
                offset = bytes.count
            default:
                offset += 1
            }
        }
        guard !durations.isEmpty else { return nil }
        if durations.count == 1 { return (screen, [0], 1) }
        return (screen, durations, loopCount ?? 1)
    }

    /// Where the image data (its LZW minimum code size byte) of the frame whose descriptor fields
    /// start at `offset` (after the 0x2C) begins: after the 9 descriptor bytes and the local
    /// palette. May lie past the end of `bytes`.
    static func imageDataOffset(_ bytes: UnsafeRawBufferPointer, descriptorAt offset: Int) -> Int {
        guard offset + 9 < bytes.count else { return bytes.count }
        let flags = bytes[offset + 8]
        return offset + 9 + (flags & 0x80 != 0 ? 3 << (Int(flags & 0x07) + 1) : 0)
    }

    private static func skipSubBlocks(_ bytes: UnsafeRawBufferPointer, _ start: Int) -> Int {
        var cursor = start
        while cursor < bytes.count {
            let length = Int(bytes[cursor])
            cursor += 1
            if length == 0 { return cursor }
            cursor += length
        }
        return bytes.count
    }

    /// The number of frames, by the same walk as ``animationInfo(_:)`` and the decoder's record
    /// loop (a byte that starts no record is skipped, not the end).
    static func imageCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        animationInfo(bytes)?.durations.count ?? 0
    }
}
