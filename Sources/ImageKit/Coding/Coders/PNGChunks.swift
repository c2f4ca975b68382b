internal import CDeflate
import Foundation

/// What the PNG coder reads from the chunks: the ICC profile, header defects, and the APNG
/// animation they describe.
extension PNGChunks {
    static let iCCP = tag("iCCP"), sRGB = tag("sRGB")

    /// The ICC profile of an `iCCP` chunk before the first `IDAT`, inflated; nil when there is
    /// none, when an `sRGB` chunk says the image is sRGB, or when it does not inflate (a broken
    /// profile is ignored, not an error).
    static func iccProfile(_ bytes: UnsafeRawBufferPointer) -> Data? {
        var compressed: UnsafeRawBufferPointer?
        var isSRGB = false
        forEach(bytes) { chunk in
            if chunk.type == sRGB { isSRGB = true }
            if chunk.type == iCCP, compressed == nil {
                let data = UnsafeRawBufferPointer(rebasing: bytes[chunk.dataStart..<chunk.dataStart + chunk.dataCount])
                if let nameEnd = data.prefix(80).firstIndex(of: 0), nameEnd + 2 < data.count, data[nameEnd + 1] == 0 {
                    compressed = UnsafeRawBufferPointer(rebasing: data[(nameEnd + 2)...])
                }
            }
            return chunk.type != IDAT
        }
        guard !isSRGB, let compressed, let decompressor = libdeflate_alloc_decompressor() else { return nil }
        defer { libdeflate_free_decompressor(decompressor) }
        // Profiles are a few KB (a LUT-based one up to a few hundred): grow until it fits.
        var capacity = 1 << 16
        while capacity <= 16 << 20 {
            var output = Data(count: capacity)
            var written = 0
            let result = output.withUnsafeMutableBytes { out in
                libdeflate_zlib_decompress(
                    decompressor, compressed.baseAddress, compressed.count, out.baseAddress, capacity, &written)
            }
            if result == LIBDEFLATE_SUCCESS { return output.prefix(written) }
            guard result == LIBDEFLATE_INSUFFICIENT_SPACE else { return nil }
            capacity *= 4
        }
        return nil
    }

    static let cICP = tag("cICP"), cLLi = tag("cLLi")

    /// The HDR colour of a `cICP` chunk before the first `IDAT` (PNG third edition) whose
    /// transfer is PQ or HLG, with the `cLLi` chunk's MaxCLL in cd/m² when there is one; nil for
    /// an SDR or untagged file.
    static func hdrColor(_ bytes: UnsafeRawBufferPointer) -> (transfer: HDRTransfer, primaries: Int, peakNits: Double?)?
    {
        var cicp: (primaries: Int, transfer: Int)?
        var peak: Double?
        forEach(bytes) { chunk in
            let d = chunk.dataStart
            if chunk.type == cICP, chunk.dataCount == 4, cicp == nil { cicp = (Int(bytes[d]), Int(bytes[d + 1])) }
            if chunk.type == cLLi, chunk.dataCount == 8, peak == nil { peak = Double(u32(bytes, d)) / 10_000 }
            return chunk.type != IDAT
        }
        guard let cicp, let transfer = HDRTransfer(cicpTransfer: cicp.transfer) else { return nil }
        return (transfer, cicp.primaries, peak)
    }

    /// A defect in the chunks before the first `IDAT` that libpng would let through (it treats
    /// them as benign), or nil.
    static func headerDefect(_ bytes: UnsafeRawBufferPointer) -> String? {
        var defect: String?
        forEach(bytes) { chunk in
            if chunk.type == iCCP {
                let data = UnsafeRawBufferPointer(rebasing: bytes[chunk.dataStart..<chunk.dataStart + chunk.dataCount])
                if let nameEnd = data.prefix(80).firstIndex(of: 0), nameEnd + 1 < data.count, data[nameEnd + 1] != 0 {
                    defect = "the iCCP chunk uses unknown compression method \(data[nameEnd + 1])"
                }
                return false
            }
            return chunk.type != IDAT
        }
        return defect
    }
}

/// The APNG structure of a file: canvas, loop count and each frame's control and data chunks.
struct APNGAnimation {
    struct Frame {
        var width: Int, height: Int, x: Int, y: Int
        /// Seconds.
        var delay: Double
        /// 0 none, 1 background, 2 previous.
        var dispose: UInt8
        /// 0 source, 1 over.
        var blend: UInt8
        /// The frame's image data: `IDAT` payloads for the default image, else `fdAT` payloads
        /// less their sequence numbers.
        var dataChunks: [Range<Int>] = []
        var usesDefaultImage = false
    }

    var width = 0, height = 0
    var playCount = 0
    var frames: [Frame] = []
    /// True when the default image (IDAT) is not the animation's first frame.
    var defaultImageHidden = true
    /// IHDR, PLTE and tRNS chunks (whole, with length and CRC) shared by every frame.
    var sharedChunks: [Range<Int>] = []

    /// Parses the animation, or nil when the chunks do not describe a consistent one (the
    /// decoder then shows the default image).
    init?(_ bytes: UnsafeRawBufferPointer) {
        var declaredFrames = 0
        var seenIDAT = false
        var current: Frame?
        var valid = true
        PNGChunks.forEach(bytes) { chunk in
            let d = chunk.dataStart
            switch chunk.type {
            case PNGChunks.IHDR:
                width = Int(PNGChunks.u32(bytes, d))
                height = Int(PNGChunks.u32(bytes, d + 4))
                sharedChunks.append(d - 8..<d + chunk.dataCount + 4)
            case PNGChunks.PLTE, PNGChunks.tRNS:
                if !seenIDAT { sharedChunks.append(d - 8..<d + chunk.dataCount + 4) }
            case PNGChunks.acTL:
                guard chunk.dataCount >= 8 else { valid = false; return false }
                declaredFrames = Int(PNGChunks.u32(bytes, d))
                playCount = Int(PNGChunks.u32(bytes, d + 4))
            case PNGChunks.fcTL:
                guard chunk.dataCount >= 26 else { valid = false; return false }
                if let finished = current { frames.append(finished) }
                let numerator = Double(PNGChunks.u16(bytes, d + 20))
                let denominator = Double(PNGChunks.u16(bytes, d + 22))
                var delay = numerator / (denominator == 0 ? 100 : denominator)
                if delay <= 0.010 { delay = 0.1 }  // what browsers do with (near-)zero delays
                current = Frame(
                    width: Int(PNGChunks.u32(bytes, d + 4)), height: Int(PNGChunks.u32(bytes, d + 8)),
                    x: Int(PNGChunks.u32(bytes, d + 12)), y: Int(PNGChunks.u32(bytes, d + 16)),
                    delay: delay, dispose: bytes[d + 24], blend: bytes[d + 25])
                if !seenIDAT { current?.usesDefaultImage = true; defaultImageHidden = false }
            case PNGChunks.IDAT:
                seenIDAT = true
                if current?.usesDefaultImage == true { current?.dataChunks.append(d..<d + chunk.dataCount) }
            case PNGChunks.fdAT:
                guard chunk.dataCount >= 4, current != nil, current?.usesDefaultImage == false else { return true }
                current?.dataChunks.append(d + 4..<d + chunk.dataCount)
            default:
                break
            }
            return true
        }
        if let finished = current { frames.append(finished) }
        if frames.count > declaredFrames { frames.removeLast(frames.count - declaredFrames) }
        guard valid, declaredFrames > 0, !frames.isEmpty, width > 0, height > 0 else { return nil }
        for frame in frames {
            guard frame.width > 0, frame.height > 0, frame.x + frame.width <= width,
                frame.y + frame.height <= height, !frame.dataChunks.isEmpty
            else { return nil }
        }
    }

    /// A standalone PNG holding one frame: the shared chunks with the frame's size in IHDR, its
    /// data as IDAT chunks, and IEND. CRCs are left zero; the decoder is told to ignore them.
    func standalonePNG(for frame: Frame, from bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func append32(_ value: UInt32) {
            out.append(contentsOf: [
                UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF),
            ])
        }
        for range in sharedChunks {
            let start = out.count
            out.append(contentsOf: bytes[range])
            if PNGChunks.u32(bytes, range.lowerBound + 4) == PNGChunks.IHDR {
                out.replaceSubrange(
                    start + 8..<start + 16,
                    with: [
                        UInt8(frame.width >> 24 & 0xFF), UInt8(frame.width >> 16 & 0xFF),
                        UInt8(frame.width >> 8 & 0xFF), UInt8(frame.width & 0xFF),
                        UInt8(frame.height >> 24 & 0xFF), UInt8(frame.height >> 16 & 0xFF),
                        UInt8(frame.height >> 8 & 0xFF), UInt8(frame.height & 0xFF),
                    ])
            }
        }
        for range in frame.dataChunks {
            append32(UInt32(range.count))
            out.append(contentsOf: [0x49, 0x44, 0x41, 0x54])
            out.append(contentsOf: bytes[range])
            append32(0)
        }
        append32(0)
        out.append(contentsOf: [0x49, 0x45, 0x4E, 0x44])
        append32(0xAE42_6082)
        return out
    }
}

/// Where an APNG decode stands between frames: the canvas showing the last frame drawn, and
/// that frame's disposal, applied before the next one is drawn.
struct APNGRunState: AnimationRunState, ~Copyable {
    struct Position {
        var nextIndex = 0
        var pending: (dispose: UInt8, rect: AnimationCanvas.Rect, saved: Bitmap?)?
    }

    var canvas: AnimationCanvas
    var position = Position()

    init(_ animation: APNGAnimation) throws(ImageError) {
        canvas = try AnimationCanvas(width: animation.width, height: animation.height)
    }

    init(canvas: consuming AnimationCanvas, position: Position) {
        self.canvas = canvas
        self.position = position
    }
}
