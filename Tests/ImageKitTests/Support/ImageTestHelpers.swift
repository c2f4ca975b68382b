import Foundation
import XCTest

@testable import ImageKit

/// Test images made from code, so tests do not depend on files for simple cases.
enum TestImages {
    /// A smooth, photo-like RGBA gradient with some texture; `alpha` adds a transparent region.
    static func gradient(width: Int, height: Int, alpha: Bool = false, seed: Int = 0) -> Bitmap {
        var buffer = try! PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                let p = row + x * 4
                p[0] = UInt8((x * 255 / max(width - 1, 1) + seed) & 0xFF)
                p[1] = UInt8((y * 255 / max(height - 1, 1) + seed * 3) & 0xFF)
                p[2] = UInt8(((x + y) * 127 / max(width + height - 2, 1) + (x ^ y) % 16) & 0xFF)
                p[3] = alpha ? UInt8(min(255, max(0, (x * 510 / max(width - 1, 1)) - 128))) : 255
            }
        }
        return buffer.freeze(isOpaque: !alpha)
    }

    /// A flat-colour image with few colours (exactly representable in a GIF palette).
    static func blocks(width: Int, height: Int, colors: Int = 6, transparentCorner: Bool = false) -> Bitmap {
        var buffer = try! PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                let index = (x / 4 + y / 4) % colors
                let p = row + x * 4
                p[0] = UInt8(index * 40)
                p[1] = UInt8(255 - index * 30)
                p[2] = UInt8(index * 17)
                p[3] = transparentCorner && x < width / 4 && y < height / 4 ? 0 : 255
            }
        }
        return buffer.freeze(isOpaque: !transparentCorner)
    }

    static func still(_ bitmap: Bitmap, format: ImageFormat = .png) -> DecodedImage {
        DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: format)
    }

    /// The newer formats this build encodes (their package traits on): AVIF, JPEG XL, HEIC.
    static var modernEncodableFormats: [ImageFormat] {
        var formats: [ImageFormat] = []
        #if AVIF
        formats.append(.avif)
        #endif
        #if JXL
        formats.append(.jpegXL)
        #endif
        #if HEIF
        formats.append(.heic)
        #endif
        return formats
    }
}

/// Peak signal-to-noise ratio over RGB (and alpha when `includeAlpha`) between two same-size
/// bitmaps; infinity when identical.
func psnr(_ a: Bitmap, _ b: Bitmap, includeAlpha: Bool = false) -> Double {
    precondition(a.width == b.width && a.height == b.height)
    let pa = a.packedRGBA(), pb = b.packedRGBA()
    var squared = 0.0
    var count = 0
    for index in stride(from: 0, to: pa.count, by: 4) {
        for channel in 0..<(includeAlpha ? 4 : 3) {
            let difference = Double(pa[index + channel]) - Double(pb[index + channel])
            squared += difference * difference
            count += 1
        }
    }
    if squared == 0 { return .infinity }
    return 10 * log10(255 * 255 / (squared / Double(count)))
}

extension XCTestCase {
    /// Polls `condition` every 2 ms for up to 10 s; a failure when it never holds.
    func waitUntil(_ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) async {
        let deadline = Date().addingTimeInterval(10)
        while !condition() {
            if Date() > deadline {
                XCTFail("condition not met in 10 s", file: file, line: line)
                return
            }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
    }
}

/// Whether two bitmaps hold the same pixels, byte for byte (row padding aside).
func samePixels(_ a: Bitmap, _ b: Bitmap) -> Bool {
    guard a.width == b.width, a.height == b.height else { return false }
    for y in 0..<a.height
    where memcmp(a.baseAddress + y * a.bytesPerRow, b.baseAddress + y * b.bytesPerRow, a.width * 4) != 0 {
        return false
    }
    return true
}
