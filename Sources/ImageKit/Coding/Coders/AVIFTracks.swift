#if AVIF
import Foundation

extension AVIFCoder {
    /// `data` with every track that is not an image sequence (audio, timed metadata, hints) hidden
    /// from libavif, or `data` itself when it has none.
    ///
    /// libavif 0.11 reads every `trak` of the movie and refuses a file whose audio track has no
    /// picture size ("Track ID [n] has an invalid size"), though browsers play such sequences.
    /// A foreign track's box type is renamed `free` in a copy: the box keeps its size, so no
    /// offset in the file moves, and libavif skips boxes it does not know.
    static func imageTracksOnly(_ data: Data) -> Data {
        let foreign = data.withUnsafeBytes { BMFFBoxes.foreignTracks(in: $0) }
        guard !foreign.isEmpty else { return data }
        var copy = Data(data)
        for offset in foreign {
            copy.replaceSubrange(
                copy.startIndex + offset + 4..<copy.startIndex + offset + 8, with: Array("free".utf8))
        }
        return copy
    }
}

/// The few ISO base media boxes ImageKit reads itself.
enum BMFFBoxes {
    /// A box: its type, where it starts, where its content starts and where it ends.
    struct Box {
        var type: String
        var start: Int
        var contentStart: Int
        var end: Int
    }

    /// The boxes directly inside `range` of `bytes`; stops at the first malformed header (libavif
    /// reports such a file itself).
    static func boxes(in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [Box] {
        var result: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            var size = Int(readUInt32(bytes, offset))
            var header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound else { break }
                let large = UInt64(readUInt32(bytes, offset + 8)) << 32 | UInt64(readUInt32(bytes, offset + 12))
                guard large <= UInt64(Int.max) else { break }
                size = Int(large)
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, size <= range.upperBound - offset else { break }
            let type = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset + 4..<offset + 8]), as: UTF8.self)
            result.append(Box(type: type, start: offset, contentStart: offset + header, end: offset + size))
            offset += size
        }
        return result
    }

    /// The start of every `moov/trak` whose media handler is not `pict` (an image sequence or its
    /// alpha) or `auxv`.
    static func foreignTracks(in bytes: UnsafeRawBufferPointer) -> [Int] {
        guard let movie = boxes(in: bytes, 0..<bytes.count).first(where: { $0.type == "moov" }) else { return [] }
        var foreign: [Int] = []
        for track in boxes(in: bytes, movie.contentStart..<movie.end) where track.type == "trak" {
            guard let media = boxes(in: bytes, track.contentStart..<track.end).first(where: { $0.type == "mdia" }),
                let handler = boxes(in: bytes, media.contentStart..<media.end).first(where: { $0.type == "hdlr" }),
                handler.end - handler.contentStart >= 12
            else { continue }
            // hdlr: version and flags (4), pre_defined (4), handler_type (4).
            let type = String(
                decoding: UnsafeRawBufferPointer(rebasing: bytes[handler.contentStart + 8..<handler.contentStart + 12]),
                as: UTF8.self)
            if type != "pict" && type != "auxv" { foreign.append(track.start) }
        }
        return foreign
    }

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }
}
#endif
