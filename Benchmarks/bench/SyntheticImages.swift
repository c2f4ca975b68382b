import Foundation
import ImageKit

/// Photo-like test content: smooth gradients and shapes with film-grain noise, so encoders see
/// the mix of flat areas, edges and texture that real photos have.
enum SyntheticImages {
    static func photo(width: Int, height: Int, alpha: Bool = false, seed: UInt32 = 1) -> Bitmap {
        let buffer = try! PixelBuffer(width: width, height: height)
        let fw = Double(width), fh = Double(height)
        var state = seed &* 2_654_435_761 | 1
        for y in 0..<height {
            let row = buffer.row(y)
            let v = Double(y) / fh
            for x in 0..<width {
                let u = Double(x) / fw
                // xorshift grain
                state ^= state << 13; state ^= state >> 17; state ^= state << 5
                let grain = Double(Int(state & 15) - 8)
                let sky = 180 * (1 - v) + 40
                let wave = 40 * sin(u * 9 + Double(seed)) * cos(v * 7)
                let dx = u - 0.6, dy = v - 0.55
                let disc = dx * dx + dy * dy < 0.04 ? 70.0 : 0
                let p = row + x * 4
                p[0] = UInt8(clamping: Int(sky * 0.6 + wave + disc + grain))
                p[1] = UInt8(clamping: Int(sky * 0.8 - wave * 0.5 + grain + 120 * u * v))
                p[2] = UInt8(clamping: Int(sky + wave * 0.3 - disc + grain))
                p[3] = alpha ? UInt8(clamping: Int(255 * min(1, 1.6 - 2 * hypot(u - 0.5, v - 0.5)))) : 255
            }
        }
        return buffer.freeze(isOpaque: !alpha)
    }

    struct Case {
        var name: String
        var format: ImageFormat
        var data: Data
        var width: Int
        var height: Int
        var frames: Int
    }

    static let kinds = [
        "jpeg-baseline-q85", "jpeg-progressive-q85", "png-rgb", "png-rgba", "gif-still", "gif-animated",
        "webp-lossy-q80", "webp-lossless", "webp-animated-q80",
    ]

    /// The generated corpus: every (kind × size) the issue names.
    static func corpus(sizes: [(Int, Int)], log: (String) -> Void) -> [Case] {
        var cases: [Case] = []
        let codecs = ImageCodersManager.shared
        for (width, height) in sizes {
            log("generating \(width)x\(height) images…")
            let opaque = DecodedImage(frames: [ImageFrame(bitmap: photo(width: width, height: height))], format: .png)
            let translucent = DecodedImage(
                frames: [ImageFrame(bitmap: photo(width: width, height: height, alpha: true))], format: .png)
            let animation = DecodedImage(
                frames: (0..<4).map {
                    ImageFrame(bitmap: photo(width: width, height: height, seed: UInt32($0 + 1)), duration: 0.1)
                },
                loopCount: 0, format: .gif)
            let kinds: [(String, ImageFormat, DecodedImage, ImageEncodingOptions)] = [
                ("jpeg-baseline-q85", .jpeg, opaque, .init(quality: 0.85)),
                ("jpeg-progressive-q85", .jpeg, opaque, .init(quality: 0.85, progressive: true)),
                ("png-rgb", .png, opaque, .default),
                ("png-rgba", .png, translucent, .default),
                ("gif-still", .gif, opaque, .default),
                ("gif-animated", .gif, animation, .default),
                ("webp-lossy-q80", .webp, opaque, .init(quality: 0.8)),
                ("webp-lossless", .webp, translucent, .init(lossless: true)),
                ("webp-animated-q80", .webp, animation, .init(quality: 0.8)),
            ]
            for (kind, format, image, options) in kinds {
                guard let data = try? codecs.encode(image, as: format, options: options) else {
                    log("  could not encode \(kind) at \(width)x\(height)")
                    continue
                }
                let frames = format == .gif || format == .webp ? image.frames.count : 1
                cases.append(
                    Case(
                        name: "\(kind)/\(width)x\(height)", format: format, data: data, width: width, height: height,
                        frames: frames))
            }
        }
        return cases
    }
}
