import Foundation

/// A decoded image: one or more frames of RGBA8 pixels, with what the container said about them.
///
/// All frames have the same size (animations are composited onto their canvas). The memory
/// ``cost`` — `bytesPerRow × height × frames` — is what caches charge for it.
///
/// An animation is held one of two ways. **Eager** (what a coder's `decode` returns):
/// ``frames`` holds every composited frame. **Lazy** (what ``ImageManager`` returns unless
/// ``ImageLoadOptions/preloadAllFrames`` is given, and a decode with
/// ``ImageDecodingOptions/decodesFramesLazily``): ``animation`` holds the encoded bytes and
/// decodes frames on demand, and ``frames`` holds only the first frame, the poster a still
/// consumer shows. Code that wants every frame asks ``frameCount`` and ``frame(at:)``, which
/// answer for both, or plays ``animation`` with an ``AnimatedImagePlayer``;
/// ``loadingAllFrames()`` turns a lazy image into an eager one.
///
/// ```swift
/// let result = try await ImageManager.shared.loadImage(with: url)
/// if let animation = result.image?.animation {
///     for try await frame in AnimatedImagePlayer(animation) { show(frame.bitmap) }
/// }
/// ```
public struct DecodedImage: Sendable {
    /// Every frame of an eager image; the first frame only of a lazy one (see ``animation``).
    public var frames: [ImageFrame]
    /// The on-demand decoder of a lazy animation (nil for stills and eager animations).
    public var animation: AnimatedImage?
    /// How many times an animation plays: 0 = forever. Still images report 1 (SDWebImage reports
    /// the container's stored value: GIF's NETSCAPE2.0 count, WebP's ANIM loop count, APNG's
    /// num_plays; a GIF without the extension plays once).
    public var loopCount: Int
    /// The container the pixels came from.
    public var format: ImageFormat
    /// The EXIF orientation the file declares (``ImageOrientation/up`` when it declares none).
    public var orientation: ImageOrientation
    /// Whether ``orientation`` has been applied to the pixels (the default), so they are upright.
    public var isOrientationApplied: Bool
    /// A preview made from part of the data (progressive loading); never cached.
    public var isPreview: Bool
    /// The data ended early and the library decoded what was there (only with
    /// ``ImageDecodingOptions/allowsPartialImages``); never cached.
    public var isPartial: Bool
    /// The ICC profile the pixels are in; nil for sRGB. Decoders convert profile-tagged images
    /// to sRGB, so this is set only by a decode with ``ImageDecodingOptions/keepsColorProfile``
    /// (and encoders embed it again).
    public var colorProfile: ColorProfile?
    /// The ICC profile the file carried, whether or not the pixels were converted from it; nil
    /// for an untagged file.
    public var sourceColorProfile: ColorProfile?
    /// The transfer function of an HDR source (PQ or HLG) whose pixels the decoder tone-mapped
    /// to SDR sRGB; nil for an SDR source. An SDR image with an HDR gain map (Ultra HDR JPEG,
    /// Apple's HEIC) is SDR: its base image is decoded as it is.
    public var hdrTransfer: HDRTransfer?
    /// Whether the pixels were tone-mapped from an HDR source (see ``hdrTransfer``).
    public var isToneMapped: Bool { hdrTransfer != nil }
    /// The file carries an HDR gain map beside the base image that was decoded (an Ultra HDR or
    /// Adobe gain-map JPEG, Apple's HEIC or JPEG, an ISO 21496-1 `tmap` item in AVIF or HEIF, a
    /// JPEG XL `jhgm` box). The gain map itself is not applied: the pixels are the base image —
    /// SDR in those JPEGs and HEICs; an AVIF's base may be HDR, which is then tone-mapped.
    public var hasGainMap = false

    /// An image of `frames`; a coder or transformer makes these.
    public init(
        frames: [ImageFrame], loopCount: Int = 1, format: ImageFormat,
        orientation: ImageOrientation = .up, isOrientationApplied: Bool = true,
        isPreview: Bool = false, isPartial: Bool = false
    ) {
        self.frames = frames
        self.loopCount = loopCount
        self.format = format
        self.orientation = orientation
        self.isOrientationApplied = isOrientationApplied
        self.isPreview = isPreview
        self.isPartial = isPartial
    }

    /// A lazy animation: its first frame as the poster, the rest decoded on demand by
    /// `animation`; the loop count and format are the animation's.
    public init(animation: AnimatedImage) throws(ImageError) {
        self.init(frames: [try animation.frame(at: 0)], loopCount: animation.loopCount, format: animation.format)
        self.animation = animation
    }

    /// The first frame's bitmap: what a still-image consumer shows.
    public var bitmap: Bitmap { frames[0].bitmap }
    /// The first frame's width in pixels.
    public var width: Int { frames.first?.bitmap.width ?? 0 }
    /// The first frame's height in pixels.
    public var height: Int { frames.first?.bitmap.height ?? 0 }
    /// Frames in the image: all of an animation's, lazy or eager.
    public var frameCount: Int { animation?.frameCount ?? frames.count }
    /// True when there is more than one frame.
    public var isAnimated: Bool { frameCount > 1 }
    /// Whether the frames after the first are decoded on demand (``animation`` is set).
    public var isLazy: Bool { animation != nil }
    /// True when no frame has a pixel with alpha < 255 (as far as the decoder knows). A lazy
    /// animation reports false: its later frames are not known.
    public var isOpaque: Bool { animation == nil && frames.allSatisfy { $0.bitmap.isOpaque } }
    /// The sum of frame durations, in seconds.
    public var totalDuration: Double { animation?.totalDuration ?? frames.reduce(0) { $0 + $1.duration } }

    /// Frame `index`, eager or lazy (a lazy image decodes it: see ``AnimatedImage/frame(at:)``).
    ///
    /// - Throws: ``ImageError``: `invalidArgument` outside `0..<frameCount`; a lazy decoder's
    ///   errors for damaged data.
    public func frame(at index: Int) throws(ImageError) -> ImageFrame {
        if let animation { return try animation.frame(at: index) }
        guard frames.indices.contains(index) else {
            throw ImageError(.invalidArgument, "frame \(index) of an image of \(frames.count) frames")
        }
        return frames[index]
    }

    /// The image with every frame in ``frames``: itself when eager; a lazy animation decoded
    /// whole (frames × canvas bytes: the limits of ``AnimatedImage/decodedImage()`` apply).
    public func loadingAllFrames() throws(ImageError) -> DecodedImage {
        guard let animation else { return self }
        var eager = try animation.decodedImage()
        eager.orientation = orientation
        eager.isOrientationApplied = isOrientationApplied
        return eager
    }

    /// Memory cost in bytes: `bytesPerRow × height × frameCount` for an eager image;
    /// for a lazy one what it holds: the encoded bytes and the decoder's canvases (the poster
    /// is the decoder's last frame, so it is not counted twice).
    public var cost: Int {
        if let animation {
            return animation.data.count + max(animation.retainedBytes, bitmap.bytesPerRow * bitmap.height)
        }
        return frames.reduce(0) { $0 + $1.bitmap.bytesPerRow * $1.bitmap.height }
    }

    /// The first frame alone, as a still image.
    public var firstFrame: DecodedImage {
        var copy = self
        copy.animation = nil
        copy.frames = Array(frames.prefix(1))
        copy.frames[0].duration = 0
        copy.loopCount = 1
        return copy
    }
}

extension DecodedImage {
    /// SDWebImage's scale-down limit: 60 MiB of decoded RGBA per image (≈ 3966 × 3966).
    public static let defaultScaleDownLimitBytes = 60 << 20
}

extension DecodedImage {
    /// Every frame scaled to `size`.
    public func resized(to size: PixelSize) throws(ImageError) -> DecodedImage {
        var copy = self
        for index in copy.frames.indices {
            copy.frames[index].bitmap = try copy.frames[index].bitmap.resized(to: size)
        }
        return copy
    }
}

extension DecodedImage {
    /// Applies ``orientation`` to every frame if it has not been applied yet.
    public func applyingOrientation() throws(ImageError) -> DecodedImage {
        guard !isOrientationApplied, orientation != .up else {
            var copy = self
            copy.isOrientationApplied = true
            return copy
        }
        var copy = self
        for index in copy.frames.indices {
            copy.frames[index].bitmap = try copy.frames[index].bitmap.applying(orientation)
        }
        copy.isOrientationApplied = true
        return copy
    }
}
