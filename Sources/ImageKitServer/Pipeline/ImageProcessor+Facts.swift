import Crypto
import Foundation
import ImageKit

extension ImageProcessor {
    /// The side of the decode-time thumbnail placeholders and colours are computed on: ThumbHash's
    /// own limit, and plenty for a BlurHash, a palette or a 32 × 32 perceptual hash.
    static let factsThumbnailSide = 100

    /// The placeholders and colours `facts` asks for, in imgproxy's `/info` spellings, computed on
    /// a 100-px decode-time thumbnail of the source (its first frame; a video's frame at the
    /// default second) — never on the full picture; and the hashsums of the source's bytes.
    func infoFacts(
        _ facts: ImageOperations.InfoFacts, data: Data, video: VideoFrameSource?, autoRotate: Bool
    ) throws(ImageServiceError) -> [String: Any] {
        var object: [String: Any] = [:]
        if !facts.hashsums.isEmpty {
            object["hashsums"] = Dictionary(
                uniqueKeysWithValues: facts.hashsums.map { ($0.rawValue, Self.hex($0, data)) })
        }
        guard facts.needsPixels else { return object }
        let box = PixelSize(width: Self.factsThumbnailSide, height: Self.factsThumbnailSide)
        do {
            let bitmap: Bitmap
            if let video {
                bitmap = try video.frame(at: videoThumbnailSecond, fitting: box).bitmap
            } else {
                var options = ImageDecodingOptions.default
                options.limits.maxPixelsPerFrame = maxPixels
                options.thumbnailPixelSize = box
                options.firstFrameOnly = true
                options.appliesOrientation = autoRotate
                bitmap = try coders.decode(data, options: options).frames[0].bitmap
            }
            if facts.blurHashX > 0 {
                object["blurhash"] = try bitmap.blurHash(componentsX: facts.blurHashX, componentsY: facts.blurHashY)
            }
            if facts.thumbHash {
                object["thumb_hash"] = try bitmap.thumbHash().map { String(format: "%02X", $0) }.joined()
            }
            if facts.average {
                object["average"] = Self.json(bitmap.averageColor(ignoringTransparent: facts.averageIgnoresTransparent))
            }
            if facts.paletteColors > 0 {
                object["palette"] = try bitmap.palette(maxColors: facts.paletteColors).map(Self.json)
            }
            if facts.perceptualHash {
                let hash = try bitmap.perceptualHash()
                object["perceptual_hash"] =
                    String(repeating: "0", count: hash.leadingZeroBitCount / 4)
                    + (hash == 0 ? "" : String(hash, radix: 16))
            }
            if facts.dominantColors {
                object["dominant_colors"] = bitmap.dominantColors(buildingMissed: facts.buildsMissedColors).named
                    .mapValues { ["R": Int($0.red), "G": Int($0.green), "B": Int($0.blue)] }
            }
            return object
        } catch {
            throw ImageServiceError(error)
        }
    }

    /// The digest of `data` in lower-case hex.
    static func hex(_ hashsum: ImageOperations.InfoFacts.Hashsum, _ data: Data) -> String {
        func hex<Digest: Sequence<UInt8>>(_ digest: Digest) -> String {
            digest.map { String(format: "%02x", $0) }.joined()
        }
        switch hashsum {
        case .md5: return hex(Insecure.MD5.hash(data: data))
        case .sha1: return hex(Insecure.SHA1.hash(data: data))
        case .sha256: return hex(SHA256.hash(data: data))
        case .sha512: return hex(SHA512.hash(data: data))
        }
    }

    /// A colour as imgproxy writes it: `{"R": …, "G": …, "B": …, "A": …}`.
    static func json(_ color: RGBAColor) -> [String: Int] {
        ["R": Int(color.red), "G": Int(color.green), "B": Int(color.blue), "A": Int(color.alpha)]
    }
}
