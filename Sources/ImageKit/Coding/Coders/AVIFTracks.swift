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

extension BMFFBoxes {
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
}
#endif
