import Foundation

/// A full coder: decodes and encodes.
public typealias ImageCoding = ImageDecoding & ImageEncoding

/// An ordered list of coders that is itself a coder (SDWebImage's `SDImageCodersManager`).
///
/// Decoding sniffs the signature and asks coders from the most recently added back: the last
/// registered coder that can handle a format wins, so an application can override a built-in.
///
/// ```swift
/// let image = try ImageCodersManager.shared.decode(data)
/// let webp = try ImageCodersManager.shared.encode(image, as: .webp, options: .init(quality: 0.8))
/// ```
public final class ImageCodersManager: ImageCoding {
    private let coders: Locked<[any ImageCoding]>

    /// The process-wide manager holding JPEG, PNG (and APNG), GIF and WebP.
    public static let shared = ImageCodersManager()

    /// A manager with the built-in coders, or with `coders` (in priority order, last wins).
    public init(coders: [any ImageCoding] = ImageCodersManager.builtInCoders) {
        self.coders = Locked(coders)
    }

    /// The coders ImageKit ships.
    public static var builtInCoders: [any ImageCoding] {
        [JPEGCoder(), PNGCoder(), GIFCoder(), WebPCoder()]
    }

    /// Adds a coder with the highest priority.
    public func add(_ coder: any ImageCoding) {
        coders.withLock { $0.append(coder) }
    }

    /// The registered coders, lowest priority first.
    public var all: [any ImageCoding] { coders.withLock { $0 } }

    public func canDecode(_ signature: ImageSignature) -> Bool {
        all.contains { $0.canDecode(signature) }
    }

    public func canEncode(_ format: ImageFormat) -> Bool {
        all.contains { $0.canEncode(format) }
    }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        guard !data.isEmpty else { throw ImageError(.emptyData, "there are no bytes to decode") }
        let signature = ImageSignature(data)
        guard let coder = all.last(where: { $0.canDecode(signature) }) else {
            if signature.format == .unknown {
                throw ImageError(.badImageData, "the data is not an image format ImageKit recognises")
            }
            throw ImageError(.unsupportedFormat, "no decoder for \(signature.format) data")
        }
        if options.decodesFramesLazily, let lazy = Self.lazyAnimation(data, signature: signature, coder: coder, options: options) {
            return lazy
        }
        return try coder.decode(data, options: options)
    }

    /// `data` as a lazy animation, when the options allow one and it is an animation of more
    /// than one frame that a built-in coder would decode at full size. nil: decode eagerly
    /// (which also reports whatever was wrong with the data).
    private static func lazyAnimation(_ data: Data, signature: ImageSignature, coder: any ImageCoding,
                                      options: ImageDecodingOptions) -> DecodedImage? {
        guard !options.firstFrameOnly, signature.format == .gif || signature.isAnimated,
              coder is GIFCoder || coder is PNGCoder || coder is WebPCoder,
              let animation = try? AnimatedImage(data: data, limits: options.limits), animation.frameCount > 1 else { return nil }
        if let thumbnail = options.thumbnailPixelSize,
           thumbnail.width < animation.width || thumbnail.height < animation.height { return nil }
        if let budget = options.scaleDownLimitBytes, animation.frameBytes > budget { return nil }
        return try? DecodedImage(animation: animation)
    }

    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError) -> Data {
        guard let coder = all.last(where: { $0.canEncode(format) }) else {
            throw ImageError(.encodingFailed, "no encoder for \(format)")
        }
        return try coder.encode(image, as: format, options: options)
    }
}
