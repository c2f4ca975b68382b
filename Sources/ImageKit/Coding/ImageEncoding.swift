import Foundation

/// Per-encode options.
public struct ImageEncodingOptions: Sendable, Hashable {
    /// Lossy quality 0...1 (SDWebImage's `compressionQuality`): JPEG, lossy WebP, AVIF, JPEG XL
    /// (as a distance, ``JXLCoder/distance(forQuality:)``) and HEIC. 1 = best.
    public var quality: Double
    /// Encode losslessly where the format can (WebP, AVIF, JPEG XL, HEIC). PNG and GIF are
    /// lossless anyway.
    public var lossless: Bool
    /// Encode only the first frame of an animation.
    public var firstFrameOnly: Bool
    /// Write a progressive JPEG (scans of increasing detail) instead of a baseline one.
    public var progressive: Bool
    /// The PNG writer's deflate effort (libdeflate), 0 (store) … 12 (smallest); 1…9 compare with
    /// zlib's levels. nil: 6.
    public var compressionLevel: Int?
    /// The encoder's speed where it has one, 0 (slowest, smallest) … 10 (fastest): AVIF's libaom
    /// speed, JPEG XL's effort 9 … 1, HEIC's x265 preset `veryslow` … `ultrafast`. nil: the
    /// coder's default (``AVIFCoder/defaultSpeed``; libjxl's and libheif's own).
    public var speed: Int?
    /// The most bytes the output may take (SDWebImage's `SDImageCoderEncodeMaxFileSize`), for
    /// the lossy formats (JPEG, WebP, AVIF, JPEG XL, HEIC): ``ImageCodersManager`` bisects the quality scale up
    /// to ``quality`` for the highest quality whose output fits. When even the lowest quality
    /// does not fit, the lowest quality's output is returned. nil: no limit.
    public var maxFileSize: Int?

    /// Options; the defaults are quality 0.9, lossy, every frame, baseline.
    public init(
        quality: Double = 0.9, lossless: Bool = false, firstFrameOnly: Bool = false, progressive: Bool = false,
        compressionLevel: Int? = nil, speed: Int? = nil, maxFileSize: Int? = nil
    ) {
        self.quality = quality
        self.lossless = lossless
        self.firstFrameOnly = firstFrameOnly
        self.progressive = progressive
        self.compressionLevel = compressionLevel
        self.speed = speed
        self.maxFileSize = maxFileSize
    }

    /// Every option at its default.
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
    // Spec: CQS-03.
    /// The format to re-encode an image in when no original data is kept (SDWebImage's
    /// rule): animated → GIF, any alpha → PNG, otherwise JPEG.
    public var preferredEncodingFormat: ImageFormat {
        if isAnimated { return .gif }
        if !frames.allSatisfy({ $0.bitmap.scanIsOpaque() }) { return .png }
        return .jpeg
    }
}
