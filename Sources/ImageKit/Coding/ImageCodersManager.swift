import Foundation

/// A full coder: decodes and encodes.
public typealias ImageCoding = ImageDecoding & ImageEncoding

/// An ordered list of coders that is itself a coder (SDWebImage's `SDImageCodersManager`).
///
/// Decoding sniffs the signature and asks coders from the most recently added back: the last
/// registered coder that can handle a format wins, so an application can override a built-in.
/// A decoder that does not encode registers as it is (``add(_:)`` takes any ``ImageDecoding``);
/// encoding asks the registered coders that are also ``ImageEncoding``.
///
/// ```swift
/// let image = try ImageCodersManager.shared.decode(data)
/// let webp = try ImageCodersManager.shared.encode(image, as: .webp, options: .init(quality: 0.8))
/// ```
public final class ImageCodersManager: ImageCoding {
    private let coders: Locked<[any ImageDecoding]>

    /// The process-wide manager holding the built-in coders (``builtInCoders``).
    public static let shared = ImageCodersManager()

    /// A manager with the built-in coders, or with `coders` (decoders, with or without an
    /// encoder; in priority order, last wins).
    public init(coders: [any ImageDecoding] = ImageCodersManager.builtInCoders) {
        self.coders = Locked(coders)
    }

    /// The coders ImageKit ships: JPEG, PNG (and APNG), GIF, WebP, TIFF, BMP, ICO, and HEIF,
    /// AVIF, JPEG XL and SVG (a decoder) when their package traits are enabled (the default), and
    /// PDF (a decoder) with the `PDF` trait.
    public static var builtInCoders: [any ImageDecoding] {
        var coders: [any ImageDecoding] = [
            JPEGCoder(), PNGCoder(), GIFCoder(), WebPCoder(), TIFFCoder(), BMPCoder(), ICOCoder(),
        ]
        #if HEIF
        coders.append(HEIFCoder())
        #endif
        #if AVIF
        coders.append(AVIFCoder())
        #endif
        #if SVG
        coders.append(SVGCoder())
        #endif
        #if JXL
        coders.append(JXLCoder())
        #endif
        #if PDF
        coders.append(PDFCoder())
        #endif
        return coders
    }

    /// Adds a decoder (or a full coder) with the highest priority.
    public func add(_ coder: any ImageDecoding) {
        coders.withLock { $0.append(coder) }
    }

    /// The registered decoders, lowest priority first (those that also encode are
    /// ``ImageEncoding`` too).
    public var all: [any ImageDecoding] { coders.withLock { $0 } }

    /// The registered encoders, lowest priority first.
    var encoders: [any ImageEncoding] { all.compactMap { $0 as? any ImageEncoding } }

    public func canDecode(_ signature: ImageSignature) -> Bool {
        all.contains { $0.canDecode(signature) }
    }

    public func canEncode(_ format: ImageFormat) -> Bool {
        encoders.contains { $0.canEncode(format) }
    }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try decode(data, signature: ImageSignature(data), options: options)
    }

    /// ``decode(_:options:)`` with the signature of `data` sniffed already (the manager sniffs a
    /// load's bytes once).
    func decode(_ data: Data, signature: ImageSignature, options: ImageDecodingOptions) throws(ImageError)
        -> DecodedImage
    {
        guard !data.isEmpty else { throw ImageError(.emptyData, "there are no bytes to decode") }
        guard let coder = all.last(where: { $0.canDecode(signature) }) else {
            if signature.format == .unknown {
                throw ImageError(.badImageData, "the data is not an image format ImageKit recognises")
            }
            throw ImageError(.unsupportedFormat, "no decoder for \(signature.format) data")
        }
        if options.decodesFramesLazily,
            let lazy = Self.lazyAnimation(data, signature: signature, coder: coder, options: options)
        {
            return lazy
        }
        return try coder.decode(data, options: options)
    }

    /// `data` as a lazy animation, when the options allow one, its coder plays animations frame
    /// by frame (``AnimatedImageDecoding``) and it is an animation of more than one frame to be
    /// decoded at full size. nil: decode eagerly (which also reports whatever was wrong with the
    /// data).
    private static func lazyAnimation(
        _ data: Data, signature: ImageSignature, coder: any ImageDecoding,
        options: ImageDecodingOptions
    ) -> DecodedImage? {
        guard !options.firstFrameOnly, let decoder = coder as? any AnimatedImageDecoding,
            let animation = try? AnimatedImage(data: data, limits: options.limits, decoder: decoder),
            animation.frameCount > 1
        else { return nil }
        if let thumbnail = options.thumbnailPixelSize,
            thumbnail.width < animation.width || thumbnail.height < animation.height
        {
            return nil
        }
        if let budget = options.scaleDownLimitBytes, animation.frameBytes > budget { return nil }
        return try? DecodedImage(animation: animation)
    }

    /// Encodes with the last registered coder for `format`. With
    /// ``ImageEncodingOptions/maxFileSize`` a lossy format's quality is bisected (see
    /// ``qualitySteps(for:)``).
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard let coder = encoders.last(where: { $0.canEncode(format) }) else {
            throw ImageError(.encodingFailed, "no encoder for \(format)")
        }
        guard let maxFileSize = options.maxFileSize, !options.lossless, let steps = Self.qualitySteps(for: format)
        else {
            return try coder.encode(image, as: format, options: options)
        }
        // Encoded size falls as quality falls (near enough for every lossy encoder here):
        // bisect for the highest step that fits, never above the requested quality.
        func encode(step: Int) throws(ImageError) -> Data {
            var stepOptions = options
            stepOptions.maxFileSize = nil
            stepOptions.quality = Double(step) / Double(steps.upperBound)
            return try coder.encode(image, as: format, options: stepOptions)
        }
        var high = min(
            steps.upperBound, max(steps.lowerBound, Int((options.quality * Double(steps.upperBound)).rounded(.down))))
        let best = try encode(step: high)
        if best.count <= maxFileSize { return best }
        var low = steps.lowerBound
        var fitting = try encode(step: low)
        guard fitting.count <= maxFileSize else { return fitting }  // nothing fits: the smallest
        // Invariant: `low` fits, `high` does not.
        while high - low > 1 {
            let middle = (low + high) / 2
            let data = try encode(step: middle)
            if data.count <= maxFileSize { low = middle; fitting = data } else { high = middle }
        }
        return fitting
    }

    /// The quality steps a lossy format's encoder tells apart, as `quality = step / upperBound`:
    /// JPEG 1…100 (libjpeg's integer quality), WebP 0…100, AVIF 0…63 (one quantizer each), JPEG XL
    /// 0…100 (cjxl's quality, mapped to a distance) and HEIC 0…100 (libheif's); nil for lossless
    /// formats.
    public static func qualitySteps(for format: ImageFormat) -> ClosedRange<Int>? {
        switch format {
        case .jpeg: 1...100
        case .webp: 0...100
        case .avif: 0...63
        case .jpegXL, .heic: 0...100
        default: nil
        }
    }
}
