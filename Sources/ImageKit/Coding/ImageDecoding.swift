import Foundation

/// Hard limits a decoder checks against the header before it allocates anything.
///
/// The defaults refuse decompression bombs: more than 16384 × 16384 pixels in one frame, or more
/// than 256 MiB of decoded RGBA across all frames of one image.
public struct DecodingLimits: Sendable, Hashable {
    /// The most pixels (width × height) one frame or canvas may have.
    public var maxPixelsPerFrame: Int
    /// The most bytes of decoded RGBA8 that all frames of one image may take together.
    public var maxTotalBytes: Int
    /// The most bytes a decoder's own buffers may take beyond the output — libjpeg's coefficient
    /// arrays for a progressive JPEG, an animation's full-size canvases, libwebp's whole-image
    /// buffer for lossless data — unless the output is larger still: the bound is
    /// `max(maxWorkingBytes, 2 × output bytes)`, so whatever may be decoded at full size may also
    /// be decoded scaled down, and a small thumbnail of a huge header is refused.
    public var maxWorkingBytes: Int
    /// The most pixels a source may have when it is scaled down while streaming (rows shrunk as
    /// they are decoded, never held whole: baseline JPEG, non-interlaced PNG, lossy WebP). Such
    /// a decode holds a few rows, so it is bounded by time rather than memory: 1 Gpx
    /// (32768 × 32768) by default.
    public var maxStreamedPixels: Int

    /// Limits; the defaults refuse frames over 16384 × 16384 and images over 256 MiB decoded.
    public init(
        maxPixelsPerFrame: Int = 16384 * 16384, maxTotalBytes: Int = 256 << 20,
        maxWorkingBytes: Int = 160 << 20, maxStreamedPixels: Int = 1 << 30
    ) {
        self.maxPixelsPerFrame = maxPixelsPerFrame
        self.maxTotalBytes = maxTotalBytes
        self.maxWorkingBytes = maxWorkingBytes
        self.maxStreamedPixels = maxStreamedPixels
    }

    /// Throws ``ImageError/Code/decompressionBomb`` when a decoder's own buffers of
    /// `workingBytes` exceed `max(maxWorkingBytes, 2 × outputBytes)`.
    public func checkWorking(_ workingBytes: Int, outputBytes: Int, _ what: @autoclosure () -> String)
        throws(ImageError)
    {
        let (doubled, overflow) = outputBytes.multipliedReportingOverflow(by: 2)
        let budget = overflow ? Int.max : max(maxWorkingBytes, doubled)
        guard workingBytes >= 0, workingBytes <= budget else {
            throw ImageError(
                .decompressionBomb,
                "\(what()) needs \(workingBytes) bytes of working memory, over the limit of \(budget)")
        }
    }

    /// Throws ``ImageError/Code/decompressionBomb`` when a streamed source of `width × height`
    /// has more than ``maxStreamedPixels`` pixels.
    public func checkStreamed(width: Int, height: Int) throws(ImageError) {
        guard width > 0, height > 0 else {
            throw ImageError(.zeroPixels, "the image declares \(width)×\(height) pixels")
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= maxStreamedPixels else {
            throw ImageError(
                .decompressionBomb,
                "\(width)×\(height) pixels exceed the limit of \(maxStreamedPixels) pixels for a streamed decode")
        }
    }

    /// The limits every decode uses unless told otherwise.
    public static let `default` = DecodingLimits()

    /// Throws ``ImageError/Code/decompressionBomb`` when one frame of `width × height` has more
    /// pixels than ``maxPixelsPerFrame`` (the bytes limit is not applied: the caller decodes it
    /// scaled down, without holding it whole).
    public func checkPixels(width: Int, height: Int) throws(ImageError) {
        guard width > 0, height > 0 else {
            throw ImageError(.zeroPixels, "the image declares \(width)×\(height) pixels")
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= maxPixelsPerFrame else {
            throw ImageError(
                .decompressionBomb,
                "\(width)×\(height) pixels exceed the limit of \(maxPixelsPerFrame) pixels per frame")
        }
    }

    /// Throws ``ImageError/Code/decompressionBomb`` when `frames` frames of `width × height`
    /// exceed the limits, ``ImageError/Code/zeroPixels`` when the size is empty.
    public func check(width: Int, height: Int, frames: Int = 1) throws(ImageError) {
        try checkPixels(width: width, height: height)
        let (bytes, overflow) = (width * height).multipliedReportingOverflow(by: 4 * max(frames, 1))
        guard !overflow, bytes <= maxTotalBytes else {
            throw ImageError(
                .decompressionBomb,
                "\(frames) frame(s) of \(width)×\(height) need \(bytes) bytes, over the limit of \(maxTotalBytes)")
        }
    }
}

/// Per-decode options.
public struct ImageDecodingOptions: Sendable, Hashable {
    /// Decode only the first frame of an animation (SDWebImage's `decodeFirstFrameOnly`).
    public var firstFrameOnly: Bool
    /// Apply the EXIF orientation so pixels come out upright (default). When false the stored
    /// pixels are returned and ``DecodedImage/orientation`` only reports the tag.
    public var appliesOrientation: Bool
    /// Return what a library could decode of truncated data (a JPEG cut short) as an image with
    /// ``DecodedImage/isPartial`` set, instead of throwing ``ImageError/Code/truncatedData``.
    public var allowsPartialImages: Bool
    /// Refuse images over these limits before allocating.
    public var limits: DecodingLimits
    /// Decode to at most this many pixels per side (SDWebImage's `imageThumbnailPixelSize`):
    /// with ``preservesAspectRatio`` the image fits inside, otherwise it is stretched to exactly
    /// this size. Never upscales a raster image; a vector (SVG, a PDF page) is drawn at this size
    /// even when it is larger than the document's own. Sizes are upright (after EXIF orientation).
    public var thumbnailPixelSize: PixelSize?
    /// See ``thumbnailPixelSize``. Default true.
    public var preservesAspectRatio: Bool
    /// Scale large images down so each frame takes at most this many bytes of RGBA, aspect
    /// ratio kept (SDWebImage's `.scaleDownLargeImages`, whose limit is
    /// ``DecodedImage/defaultScaleDownLimitBytes``). The budget is divided across the frames of
    /// an animation. nil = no scale-down.
    public var scaleDownLimitBytes: Int?
    /// Return an animation as a lazy image (``DecodedImage/animation``: the bytes, the first
    /// frame, the rest decoded on demand) instead of decoding every frame. ``limits`` then apply
    /// to one canvas. Honoured by ``ImageCodersManager`` for coders that are
    /// ``AnimatedImageDecoding`` (GIF, APNG, WebP, AVIF, JPEG XL), when the canvas needs no
    /// scaling (a ``thumbnailPixelSize`` or
    /// ``scaleDownLimitBytes`` smaller than the canvas decodes eagerly, scaled). Default false;
    /// ``ImageManager`` sets it unless ``ImageLoadOptions/preloadAllFrames`` is given.
    public var decodesFramesLazily: Bool
    /// Keep the pixels in the colour space of the file's embedded ICC profile and carry the
    /// profile on ``DecodedImage/colorProfile``, instead of converting them to sRGB (the
    /// default; SDWebImage draws through the system, which converts). Default false.
    public var keepsColorProfile = false

    /// Which pages of a multi-page document (a TIFF) to decode: the first (the default, as an
    /// image viewer shows it), page `n` (from 0), or every page as the frames of one image (the
    /// pages must then share one size; they are not an animation: each frame lasts 0 s).
    public var pages: ImagePages = .first

    /// The data is a progressive JPEG cut after its DC scans (the manager's
    /// ``ImageLoadOptions/thumbnailFromFirstScans``): decode from those alone or fail.
    var stopsAfterDCScans = false

    /// Options; the defaults decode the whole image, every frame, oriented upright.
    public init(
        firstFrameOnly: Bool = false, appliesOrientation: Bool = true,
        allowsPartialImages: Bool = false, limits: DecodingLimits = .default,
        thumbnailPixelSize: PixelSize? = nil, preservesAspectRatio: Bool = true,
        scaleDownLimitBytes: Int? = nil, decodesFramesLazily: Bool = false
    ) {
        self.firstFrameOnly = firstFrameOnly
        self.appliesOrientation = appliesOrientation
        self.allowsPartialImages = allowsPartialImages
        self.limits = limits
        self.thumbnailPixelSize = thumbnailPixelSize
        self.preservesAspectRatio = preservesAspectRatio
        self.scaleDownLimitBytes = scaleDownLimitBytes
        self.decodesFramesLazily = decodesFramesLazily
    }

    /// True when the options may make the output smaller than the source.
    public var scalesDown: Bool { thumbnailPixelSize != nil || scaleDownLimitBytes != nil }

    /// Every option at its default.
    public static let `default` = ImageDecodingOptions()
}

/// A decoder for one or more formats (SDWebImage's `SDImageCoder` decoding half).
///
/// Implementations are stateless or internally synchronised: one instance decodes on many
/// threads at once.
public protocol ImageDecoding: Sendable {
    /// Whether this decoder reads data whose signature is `signature`.
    func canDecode(_ signature: ImageSignature) -> Bool
    /// Decodes `data` into RGBA8 frames.
    /// - Throws: ``ImageError`` — never traps on bad input.
    func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage
}

extension ImageDecoding {
    /// Decodes with the default options.
    public func decode(_ data: Data) throws(ImageError) -> DecodedImage {
        try decode(data, options: .default)
    }
}

/// Which pages of a multi-page document to decode (``ImageDecodingOptions/pages``).
public enum ImagePages: Sendable, Hashable {
    /// The first page.
    case first
    /// Page `n`, counted from 0.
    case page(Int)
    /// Every page, as frames of one image.
    case all
}
