import CImageCodecs
import Foundation
import FuzzSupport

@testable import ImageKit

/// The GIF block walker, and the LZW decoder and frame drawer (ik_gif.c) with both rule sets,
/// any frame geometry (partly off a 96×96 canvas) and the first image descriptor of the input.
exit(
    runFuzzer { input in
        let width = Int(input.byte()) + 1, height = Int(input.byte()) + 1
        let flags = input.byte()
        let left = Int32(input.byte()) - 64, top = Int32(input.byte()) - 64
        let transparent = Int32(input.byte()) - 1
        let bytes = input.bytes
        _ = GIFStructure.imageCount(bytes)
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        let descriptor =
            bytes.firstIndex(of: 0x2C).map { GIFStructure.imageDataOffset(bytes, descriptorAt: $0 + 1) } ?? 0
        var indices = [UInt8](repeating: 0, count: width * height + Int(IK_GIF_LZW_SLACK))
        var decoded = 0, end = 0
        _ = ik_gif_lzw_decode(base, bytes.count, descriptor, Int32(flags & 1), &indices, width * height, &decoded, &end)
        precondition(decoded <= width * height && end <= bytes.count)
        var canvas = [UInt8](repeating: 0, count: 96 * 96 * 4)
        let palette = [UInt32](repeating: 0xFF00_0000, count: 256)
        ik_gif_draw(
            indices, decoded, Int32(width), Int32(height), Int32(flags >> 1 & 1), left, top, palette, transparent,
            &canvas, 96 * 4, 96, 96)
    })
