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
        if let sourceFormat, sourceFormat.capabilities.keepsSourceFormat { return sourceFormat }
        return isAnimated ? .gif : hasAlpha ? .png : .jpeg
    }
}

extension ImageOperations.Format {
    /// What an output format is and can do: its row in ``capabilities``.
    public struct Capabilities: Sendable, Hashable {
        /// ImageKit's format for its coder; nil for a video format.
        public var imageFormat: ImageFormat?
        /// The video container, for a video format.
        public var videoFormat: VideoWriter.Format?
        /// The media type of an answer in it.
        public var mimeType: String
        /// Whether an animation written in it keeps every frame (the others answer the first).
        public var keepsFrames: Bool
        /// Whether it keeps transparency.
        public var hasAlpha: Bool
        /// Whether the service writes it (TIFF and BMP are read, never written).
        public var isOutput: Bool
        /// Whether a source in this format is answered in it when the URL asks none.
        public var keepsSourceFormat: Bool
        /// Whether a client must list it in `Accept` before `best` tries it (JPEG, PNG and GIF
        /// every client shows).
        public var needsAccept: Bool
        /// Where `best` puts it when it picks by rule above its resolution cap, smallest first;
        /// nil: `best` never tries it.
        public var bestRank: Int?
        /// How `best` encodes it when it tries the candidates.
        public var bestTries: BestTries = .lossy
    }

    /// The encodings `best` tries in a format: lossy at the asked (or autoquality's) quality,
    /// lossless where lossless wins — an image of few colours (a graphic, a logo), or for PNG a
    /// transparent one — and some formats for animations only.
    public struct BestTries: Sendable, Hashable {
        /// A lossy encode.
        public var lossy: Bool
        /// A lossless encode when the image has few colours.
        public var losslessForFewColours: Bool
        /// A lossless encode when the image is transparent.
        public var losslessForAlpha: Bool
        /// Tried only for an animation (a still GIF never beats PNG).
        public var animationsOnly: Bool

        /// Lossy only (JPEG, AVIF).
        public static let lossy = BestTries(
            lossy: true, losslessForFewColours: false, losslessForAlpha: false, animationsOnly: false)

        /// Every part given.
        public init(lossy: Bool, losslessForFewColours: Bool, losslessForAlpha: Bool, animationsOnly: Bool) {
            self.lossy = lossy
            self.losslessForFewColours = losslessForFewColours
            self.losslessForAlpha = losslessForAlpha
            self.animationsOnly = animationsOnly
        }

        /// The encodings to try (`true`: lossless) for an image with `fewColours`, `opaque`,
        /// `animated`; empty when none is worth trying.
        public func encodings(fewColours: Bool, opaque: Bool, animated: Bool) -> [Bool] {
            guard animated || !animationsOnly else { return [] }
            var tries: [Bool] = []
            if lossy { tries.append(false) }
            if (losslessForFewColours && fewColours) || (losslessForAlpha && !opaque) { tries.append(true) }
            return tries
        }
    }

    /// The one table of what each format can do: a new format is a new case, and the compiler asks
    /// for its row here; the service's other rules (``encodableFormat``, ``keepsFrames``,
    /// ``mimeType``, the `best` candidates, the format kept from the source) read it.
    public var capabilities: Capabilities {
        switch self {
        case .jpeg:
            Capabilities(
                imageFormat: .jpeg, mimeType: "image/jpeg", keepsFrames: false, hasAlpha: false, isOutput: true,
                keepsSourceFormat: true, needsAccept: false, bestRank: 2)
        case .png:
            Capabilities(
                imageFormat: .png, mimeType: "image/png", keepsFrames: true, hasAlpha: true, isOutput: true,
                keepsSourceFormat: true, needsAccept: false, bestRank: 3,
                bestTries: BestTries(
                    lossy: false, losslessForFewColours: true, losslessForAlpha: true, animationsOnly: false))
        case .webp:
            Capabilities(
                imageFormat: .webp, mimeType: "image/webp", keepsFrames: true, hasAlpha: true, isOutput: true,
                keepsSourceFormat: true, needsAccept: true, bestRank: 1,
                bestTries: BestTries(
                    lossy: true, losslessForFewColours: true, losslessForAlpha: false, animationsOnly: false))
        case .avif:
            Capabilities(
                imageFormat: .avif, mimeType: "image/avif", keepsFrames: true, hasAlpha: true, isOutput: true,
                keepsSourceFormat: true, needsAccept: true, bestRank: 0)
        case .gif:
            Capabilities(
                imageFormat: .gif, mimeType: "image/gif", keepsFrames: true, hasAlpha: true, isOutput: true,
                keepsSourceFormat: true, needsAccept: false, bestRank: 4,
                bestTries: BestTries(
                    lossy: true, losslessForFewColours: false, losslessForAlpha: false, animationsOnly: true))
        case .heic:
            Capabilities(
                imageFormat: .heic, mimeType: "image/heic", keepsFrames: false, hasAlpha: true, isOutput: true,
                keepsSourceFormat: false, needsAccept: true, bestRank: nil)
        case .jxl:
            Capabilities(
                imageFormat: .jpegXL, mimeType: "image/jxl", keepsFrames: false, hasAlpha: true, isOutput: true,
                keepsSourceFormat: false, needsAccept: true, bestRank: nil)
        case .tiff:
            Capabilities(
                imageFormat: .tiff, mimeType: "image/tiff", keepsFrames: false, hasAlpha: true, isOutput: false,
                keepsSourceFormat: false, needsAccept: false, bestRank: nil)
        case .bmp:
            Capabilities(
                imageFormat: .bmp, mimeType: "image/bmp", keepsFrames: false, hasAlpha: true, isOutput: false,
                keepsSourceFormat: false, needsAccept: false, bestRank: nil)
        case .mp4:
            Capabilities(
                videoFormat: .mp4, mimeType: "video/mp4", keepsFrames: true, hasAlpha: false, isOutput: true,
                keepsSourceFormat: false, needsAccept: false, bestRank: nil)
        case .webm:
            Capabilities(
                videoFormat: .webm, mimeType: "video/webm", keepsFrames: true, hasAlpha: false, isOutput: true,
                keepsSourceFormat: false, needsAccept: false, bestRank: nil)
        }
    }

    /// The format of a source ImageKit read, nil for one the grammars cannot name (SVG, PDF …).
    public init?(_ format: ImageFormat) {
        let match: Self? = format == .heif ? .heic : Self.allCases.first { $0.capabilities.imageFormat == format }
        guard let match else { return nil }
        self = match
    }

    /// The output format as ImageKit's, nil when this build cannot write it (415): HEIC, AVIF
    /// and JPEG XL need their package traits; TIFF and BMP are read, never written.
    public var encodableFormat: ImageFormat? {
        let capabilities = self.capabilities
        guard capabilities.isOutput, let format = capabilities.imageFormat, format.isCodecSupported else { return nil }
        return format
    }

    /// The video format of this output, nil for an image format.
    public var videoFormat: VideoWriter.Format? { capabilities.videoFormat }

    /// Whether an animation written in this format keeps every frame (GIF, WebP, AVIF, PNG as
    /// APNG, and video); the others answer the first frame.
    public var keepsFrames: Bool { capabilities.keepsFrames }

    /// The media type of an answer in this format.
    public var mimeType: String { capabilities.mimeType }

    /// The formats `best` tries for a client whose `Accept` is `accept` (lowercased), among
    /// `allowed`, in this build: those every client shows, and those it lists.
    public static func bestCandidates(accept: String, allowed: [Self]) -> [Self] {
        let candidates = allCases.filter { format in
            let capabilities = format.capabilities
            return capabilities.bestRank != nil && allowed.contains(format) && format.encodableFormat != nil
                && (!capabilities.needsAccept || accept.utf8Contains(capabilities.mimeType))
        }
        // Those every client shows first: the list names the result's format class.
        return candidates.filter { !$0.capabilities.needsAccept } + candidates.filter { $0.capabilities.needsAccept }
    }

    /// The formats the service writes, as a sentence's list (`jpeg, png, … or webm`).
    static var outputNames: String {
        let names = allCases.filter { $0.capabilities.isOutput }.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
    }
}
