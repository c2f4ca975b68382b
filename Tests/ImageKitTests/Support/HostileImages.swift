import Foundation

@testable import ImageKit

/// Small files whose headers claim huge images (decompression bombs), built byte by byte.
enum HostileImages {
    static func u16be(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    static func u32be(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
    static func u16le(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
    static func u24le(_ value: Int) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF)]
    }
    static func u32le(_ value: Int) -> [UInt8] { u16le(value & 0xFFFF) + u16le(value >> 16) }

    /// A JPEG with 4:2:0 YCbCr, one-code Huffman tables, a first scan and `padding` zero bytes
    /// of scan data. `marker` 0xC0 is baseline, 0xC2 progressive.
    static func jpeg(marker: UInt8, width: Int, height: Int, padding: Int = 1200, scanComponents: Int = 3) -> Data {
        var bytes: [UInt8] = [0xFF, 0xD8]
        bytes += [0xFF, 0xDB] + u16be(67) + [0] + [UInt8](repeating: 1, count: 64)
        bytes +=
            [0xFF, marker] + u16be(17) + [8] + u16be(height) + u16be(width) + [3, 1, 0x22, 0, 2, 0x11, 0, 3, 0x11, 0]
        for table: UInt8 in [0x00, 0x10] {
            bytes += [0xFF, 0xC4] + u16be(20) + [table, 1] + [UInt8](repeating: 0, count: 15) + [0]
        }
        bytes += [0xFF, 0xDA] + u16be(6 + 2 * scanComponents) + [UInt8(scanComponents)]
        for component in 0..<scanComponents { bytes += [UInt8(component + 1), 0] }
        bytes += [0, marker == 0xC2 ? 0 : 63, 0]
        bytes += [UInt8](repeating: 0, count: padding) + [0xFF, 0xD9]
        return Data(bytes)
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + payload
        return u32be(payload.count) + body + u32be(Int(crc32(body)))
    }

    /// A PNG (RGBA, 8-bit) whose IHDR claims `width × height`; `animated` adds acTL and fcTL.
    static func png(width: Int, height: Int, interlaced: Bool = false, animated: Bool = false) -> Data {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        bytes += chunk("IHDR", u32be(width) + u32be(height) + [8, 6, 0, 0, interlaced ? 1 : 0])
        if animated {
            bytes += chunk("acTL", u32be(1) + u32be(0))
            bytes += chunk(
                "fcTL", u32be(0) + u32be(width) + u32be(height) + u32be(0) + u32be(0) + u16be(1) + u16be(10) + [0, 0])
        }
        // A zlib stream of a few zero bytes: rows 0 … of filter type 0.
        bytes += chunk("IDAT", [0x78, 0x9C, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])
        bytes += chunk("IEND", [])
        return Data(bytes)
    }

    /// A GIF whose logical screen is `width × height`, with one 1×1 frame.
    static func gif(width: Int, height: Int) -> Data {
        var bytes = Array("GIF89a".utf8) + u16le(width) + u16le(height) + [0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        bytes += [0x2C] + u16le(0) + u16le(0) + u16le(1) + u16le(1) + [0]
        bytes += [2, 2, 0x4C, 0x01, 0] + [0x3B]
        return Data(bytes)
    }

    /// A GIF animation of `frames` frames on a `width × height` screen, each frame one pixel
    /// drawn with a 40 ms delay: a few bytes per frame, a full canvas per frame when decoded whole.
    static func gifAnimation(width: Int, height: Int, frames: Int) -> Data {
        var bytes = Array("GIF89a".utf8) + u16le(width) + u16le(height) + [0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        bytes += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
        for index in 0..<frames {
            bytes += [0x21, 0xF9, 4, 0x04] + u16le(4) + [0, 0]
            bytes += [0x2C] + u16le(index % width) + u16le(0) + u16le(1) + u16le(1) + [0]
            bytes += [2, 2, 0x4C, 0x01, 0]
        }
        return Data(bytes + [0x3B])
    }

    /// A lossless WebP (VP8L) header claiming `width × height` (at most 16384 each).
    static func webpLossless(width: Int, height: Int) -> Data {
        let bits = (width - 1) | (height - 1) << 14 | 1 << 28
        let payload: [UInt8] = [0x2F] + u32le(bits) + [UInt8](repeating: 0, count: 64)
        let riff = Array("WEBP".utf8) + Array("VP8L".utf8) + u32le(payload.count) + payload
        return Data(Array("RIFF".utf8) + u32le(riff.count) + riff)
    }

    /// An animated WebP (VP8X with the animation flag) whose canvas is `width × height`.
    static func webpAnimated(width: Int, height: Int) -> Data {
        var riff = Array("WEBP".utf8)
        riff += Array("VP8X".utf8) + u32le(10) + [0x02, 0, 0, 0] + u24le(width - 1) + u24le(height - 1)
        riff += Array("ANIM".utf8) + u32le(6) + [0, 0, 0, 0] + u16le(0)
        let frame = webpLossless(width: 1, height: 1).dropFirst(12)
        let anmf: [UInt8] = u24le(0) + u24le(0) + u24le(0) + u24le(0) + u24le(100) + [0] + Array(frame)
        riff += Array("ANMF".utf8) + u32le(anmf.count) + anmf
        return Data(Array("RIFF".utf8) + u32le(riff.count) + riff)
    }
}
