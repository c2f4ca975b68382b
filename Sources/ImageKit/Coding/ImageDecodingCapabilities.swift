import Foundation

// What a decoder can do beyond a one-shot decode. The coders manager, `AnimatedImage`,
// `ProgressiveDecoder` and the image manager ask the registered coder for these capabilities
// (`coder as? any AnimatedImageDecoding`), never for a concrete type, so a coder an application
// registers gets lazy frames, progressive previews and an early finish as the built-in ones do.

/// An animation's facts from its headers: what ``AnimatedImage`` answers before any frame is
/// decoded.
public struct AnimationInfo: Sendable, Hashable {
    /// The canvas every frame is composited onto.
    public var canvasSize: PixelSize
    /// Each frame's display time in seconds; one entry per frame.
    public var durations: [Double]
    /// How many times the animation plays: 0 = forever.
    public var loopCount: Int

    /// The facts of an animation of `durations.count` frames.
    public init(canvasSize: PixelSize, durations: [Double], loopCount: Int) {
        self.canvasSize = canvasSize
        self.durations = durations
        self.loopCount = loopCount
    }
}

/// A decoder that plays an animation frame by frame on demand (SDWebImage's
/// `SDAnimatedImageCoder`): ``AnimatedImage``, ``AnimatedImagePlayer``, `imagekit frames` and the
/// manager's lazy frames (``ImageDecodingOptions/decodesFramesLazily``) use it instead of decoding
/// every frame at once.
///
/// ```swift
/// extension ToyCoder: AnimatedImageDecoding {
///     func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo? {
///         try ToyHeader(data).map { AnimationInfo(canvasSize: $0.size, durations: $0.durations, loopCount: 0) }
///     }
///     func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
///         -> any AnimationFrameCursor { ToyCursor(data) }
/// }
/// let coders = ImageCodersManager()         // the built-in coders
/// coders.add(ToyCoder())                      // a decoder: no encoder needed
/// let animation = try AnimatedImage(data: toyData, coders: coders)
/// ```
public protocol AnimatedImageDecoding: ImageDecoding {
    /// The canvas, durations and loop count of `data` from its headers, decoding no frame; nil
    /// when `data` is not an animation this decoder plays frame by frame (a still image, or a
    /// form it only decodes whole).
    ///
    /// - Throws: ``ImageError`` for headers that are damaged.
    func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo?

    /// A cursor over the frames of `data`, standing before frame 0. `info` is what
    /// ``animationInfo(_:limits:)`` returned for it; the cursor keeps `data` (no copy needed:
    /// `Data` is shared).
    func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
        -> any AnimationFrameCursor
}

/// A decoder that shows an image while its bytes arrive (SDWebImage's `SDProgressiveImageCoder`):
/// ``ProgressiveDecoder`` and the manager's progressive loads (`.progressiveLoad`) ask it for a
/// session per image.
public protocol ProgressiveImageDecoding: ImageDecoding {
    /// A session for one image whose first bytes have `signature`, decoding with `options`; nil
    /// when this form of the format has no preview (an animated WebP, say).
    func makeProgressiveSession(for signature: ImageSignature, options: ImageDecodingOptions) -> (
        any ProgressiveDecodingSession
    )?
}

/// One image's incremental decode: fed the bytes received so far, it answers a preview when
/// they show something new.
public protocol ProgressiveDecodingSession: AnyObject {
    /// A preview of `data` (every byte received so far, a prefix of the file), or nil when there
    /// is nothing new to show or the bytes cannot be decoded yet. Called from one thread at a
    /// time, with growing prefixes.
    func preview(_ data: Data) -> DecodedImage?
}

/// What a decoder says about the start of a download: whether it already holds everything the
/// image under some decoding options needs.
public enum ImagePrefixVerdict: Sendable, Equatable {
    /// Not yet: ask again with more bytes.
    case pending
    /// Never: the image needs the whole file.
    case never
    /// The first `byteCount` bytes decode to the same image as the whole file would.
    case ready(byteCount: Int)
}

/// A decoder that can finish a load early (ImageKit's first-scans thumbnail of a progressive
/// JPEG): the manager asks it while the bytes arrive and, when it answers
/// ``ImagePrefixVerdict/ready(byteCount:)``, stops the transfer and decodes the prefix.
public protocol EarlyFinishImageDecoding: ImageDecoding {
    /// Whether `data`, the start of a download, holds all that the image under `options` needs.
    func prefixVerdict(_ data: Data, options: ImageDecodingOptions) -> ImagePrefixVerdict
}

extension ImageCodersManager {
    /// The coder that decodes data with `signature` (the last registered one that can), as
    /// `Capability`; nil when there is none or it lacks the capability.
    func decoder<Capability>(for signature: ImageSignature, as capability: Capability.Type) -> Capability? {
        all.last { $0.canDecode(signature) } as? Capability
    }
}
