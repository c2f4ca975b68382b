import Foundation
import FuzzSupport

@testable import ImageKit

/// The one-shot PNG path against libpng (differential): whatever the fast path decodes, libpng
/// must decode to the same pixels. CRCs are not checked on either side, so that mutations reach
/// the chunk walker, the inflate and the unfiltering instead of stopping at a CRC mismatch.
/// One known difference is allowed: zlib rejects some malformed deflate streams that libdeflate
/// decodes (distance symbols 30–31 and some incomplete Huffman codes: zlib's "invalid distance
/// code" / "invalid code lengths set"), so libpng's "IDAT: invalid …" beside a fast decode is not
/// a finding (README, "Decisions").
let limits = DecodingLimits(maxPixelsPerFrame: 4 << 20, maxTotalBytes: 64 << 20, maxWorkingBytes: 64 << 20)
exit(
    runFuzzer { input in
        let bytes = input.bytes
        guard let fast = (try? PNGCoder.decodeStillFast(bytes, limits: limits, checksCRC: false)) ?? nil else { return }
        let reference: Bitmap
        do throws(ImageError) {
            reference = try PNGCoder.decodeStillWithLibpng(bytes, limits: limits, ignoreCRC: true)
        } catch {
            if error.message.contains("IDAT: invalid") { return }
            fatalError("the fast path decoded a PNG that libpng rejects: \(error)")
        }
        guard fast.width == reference.width, fast.height == reference.height,
            fast.packedRGBA() == reference.packedRGBA(), fast.isOpaque == reference.isOpaque
        else {
            fatalError("the fast path and libpng decoded different pixels")
        }
    })
