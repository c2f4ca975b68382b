import Foundation

/// One frame of a decoded image: its pixels and how long it is shown.
public struct ImageFrame: Sendable {
    public var bitmap: Bitmap
    /// Display time in seconds; 0 for still images.
    public var duration: Double

    public init(bitmap: Bitmap, duration: Double = 0) {
        self.bitmap = bitmap
        self.duration = duration
    }
}

/// EXIF orientation (TIFF tag 274): how the stored pixels must be transformed to stand upright.
public enum ImageOrientation: Int, Sendable, Hashable, CaseIterable {
    case up = 1
    case upMirrored = 2
    case down = 3
    case downMirrored = 4
    case leftMirrored = 5
    case right = 6
    case rightMirrored = 7
    case left = 8

    /// True when applying the orientation swaps width and height (values 5–8).
    public var swapsDimensions: Bool { rawValue >= 5 }
}

/// A decoded image: one or more frames of RGBA8 pixels, with what the container said about them.
///
/// All frames have the same size (animations are composited onto their canvas). The memory
/// ``cost`` — `bytesPerRow × height × frames` — is what caches charge for it.
public struct DecodedImage: Sendable {
    public var frames: [ImageFrame]
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

    public init(frames: [ImageFrame], loopCount: Int = 1, format: ImageFormat,
                orientation: ImageOrientation = .up, isOrientationApplied: Bool = true,
                isPreview: Bool = false, isPartial: Bool = false) {
        self.frames = frames
        self.loopCount = loopCount
        self.format = format
        self.orientation = orientation
        self.isOrientationApplied = isOrientationApplied
        self.isPreview = isPreview
        self.isPartial = isPartial
    }

    /// The first frame's bitmap: what a still-image consumer shows.
    public var bitmap: Bitmap { frames[0].bitmap }
    public var width: Int { frames.first?.bitmap.width ?? 0 }
    public var height: Int { frames.first?.bitmap.height ?? 0 }
    public var isAnimated: Bool { frames.count > 1 }
    /// True when no frame has a pixel with alpha < 255 (as far as the decoder knows).
    public var isOpaque: Bool { frames.allSatisfy { $0.bitmap.isOpaque } }
    /// The sum of frame durations, in seconds.
    public var totalDuration: Double { frames.reduce(0) { $0 + $1.duration } }

    /// Memory cost in bytes: `bytesPerRow × height × frameCount` (DESIGN §2).
    public var cost: Int {
        frames.reduce(0) { $0 + $1.bitmap.bytesPerRow * $1.bitmap.height }
    }

    /// The first frame alone, as a still image.
    public var firstFrame: DecodedImage {
        var copy = self
        copy.frames = Array(frames.prefix(1))
        copy.frames[0].duration = 0
        copy.loopCount = 1
        return copy
    }
}
