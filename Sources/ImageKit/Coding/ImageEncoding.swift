import Foundation

/// Per-encode options.
public struct ImageEncodingOptions: Sendable, Hashable {
    /// Lossy quality 0...1 (SDWebImage's `compressionQuality`); JPEG and lossy WebP. 1 = best.
    public var quality: Double
    /// Encode losslessly where the format can (WebP). PNG and GIF are lossless anyway.
    public var lossless: Bool
    /// Encode only the first frame of an animation.
    public var firstFrameOnly: Bool
    /// Write a progressive JPEG (scans of increasing detail) instead of a baseline one.
    public var progressive: Bool
    /// The PNG writer's deflate effort (libdeflate), 0 (store) … 12 (smallest); 1…9 compare with
    /// zlib's levels. nil: 6.
    public var compressionLevel: Int?

    public init(quality: Double = 0.9, lossless: Bool = false, firstFrameOnly: Bool = false, progressive: Bool = false,
                compressionLevel: Int? = nil) {
        self.quality = quality
        self.lossless = lossless
        self.firstFrameOnly = firstFrameOnly
        self.progressive = progressive
        self.compressionLevel = compressionLevel
    }

    public static let `default` = ImageEncodingOptions()
}

/// An encoder for one or more formats (SDWebImage's `SDImageCoder` encoding half).
public protocol ImageEncoding: Sendable {
    /// Whether this encoder writes `format`.
    func canEncode(_ format: ImageFormat) -> Bool
    /// Encodes `image` as `format`. Animated images stay animated where the format allows
    /// (GIF, WebP); other formats get the first frame.
    func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError) -> Data
}

extension DecodedImage {
    /// The format to re-encode an image in when no original data is kept (SDWebImage's CQS-03
    /// rule): animated → GIF, any alpha → PNG, otherwise JPEG.
    public var preferredEncodingFormat: ImageFormat {
        if isAnimated { return .gif }
        if !frames.allSatisfy({ $0.bitmap.scanIsOpaque() }) { return .png }
        return .jpeg
    }
}
