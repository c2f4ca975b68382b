import ImageKit

extension ImageOperations {
    /// The format of the answer when no `Accept` negotiation applies: the one asked for (an
    /// animation asked as JPEG is its first frame; GIF, WebP, AVIF and PNG keep every frame),
    /// else the source's when the service writes it, else GIF for an animation (a video's
    /// `vta` preview), JPEG for a still (PNG for one with alpha).
    ///
    /// - Parameters:
    ///   - sourceFormat: the source's format, when the service writes it.
    ///   - keepsGIF: a GIF source stays a GIF whatever is asked (thumbor runs none of its filters
    ///     on a GIF, `format()` included).
    ///   - hasAlpha: whether the image has transparent pixels (PNG then, rather than JPEG).
    ///   - isAnimated: whether the image has more than one frame to keep.
    public func outputFormat(sourceFormat: Format?, keepsGIF: Bool, hasAlpha: Bool, isAnimated: Bool = false)
        -> Format
    {
        // An animation becomes video when asked (`gifv()`, `format(mp4)`), GIF rules or not; a
        // build without the Video trait leaves it as it is under `gifv()`, as thumbor does without
        // its video engine (an explicit `format(mp4)` is still 415).
        if isAnimated, let animationAsVideo, VideoWriter.isSupported { return animationAsVideo }
        if isAnimated, let format, format.videoFormat != nil { return format }
        if keepsGIF && sourceFormat == .gif { return .gif }
        if let format { return format }
        switch sourceFormat {
        case .jpeg?, .png?, .webp?, .gif?, .avif?: return sourceFormat!
        default: return isAnimated ? .gif : hasAlpha ? .png : .jpeg
        }
    }
}

extension ImageOperations.Format {
    /// The format of a source ImageKit read, nil for one the grammars cannot name (SVG, PDF …).
    public init?(_ format: ImageFormat) {
        switch format {
        case .jpeg: self = .jpeg
        case .png: self = .png
        case .webp: self = .webp
        case .gif: self = .gif
        case .avif: self = .avif
        case .heic, .heif: self = .heic
        case .jpegXL: self = .jxl
        case .tiff: self = .tiff
        case .bmp: self = .bmp
        default: return nil
        }
    }

    /// The output format as ImageKit's, nil when this build cannot write it (415): HEIC, AVIF
    /// and JPEG XL need their package traits; TIFF and BMP are read, never written.
    public var encodableFormat: ImageFormat? {
        switch self {
        case .jpeg: return .jpeg
        case .png: return .png
        case .webp: return .webp
        case .gif: return .gif
        case .avif: return ImageFormat.avif.isCodecSupported ? .avif : nil
        case .heic: return ImageFormat.heic.isCodecSupported ? .heic : nil
        case .jxl: return ImageFormat.jpegXL.isCodecSupported ? .jpegXL : nil
        case .tiff, .bmp, .mp4, .webm: return nil
        }
    }

    /// The video format of this output, nil for an image format.
    public var videoFormat: VideoWriter.Format? {
        switch self {
        case .mp4: return .mp4
        case .webm: return .webm
        default: return nil
        }
    }

    /// Whether an animation written in this format keeps every frame (GIF, WebP, AVIF, PNG as
    /// APNG, and video); the others answer the first frame.
    public var keepsFrames: Bool {
        switch self {
        case .gif, .webp, .avif, .png, .mp4, .webm: return true
        case .jpeg, .heic, .jxl, .tiff, .bmp: return false
        }
    }

    /// The media type of an answer in this format.
    public var mimeType: String {
        switch self {
        case .jpeg: return "image/jpeg"
        case .jxl: return "image/jxl"
        case .mp4, .webm: return "video/" + rawValue
        default: return "image/" + rawValue
        }
    }
}
