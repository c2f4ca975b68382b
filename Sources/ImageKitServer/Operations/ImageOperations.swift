import Foundation
import ImageKit

/// What an image request asks for, free of the URL grammar it came in: thumbor's and
/// imgproxy's URLs both parse into this, and the service plans its work and names its results
/// from it alone.
///
/// Every field has a default that means "nothing asked"; two requests that differ only in how
/// they spelled the same thing (option order, defaults written out, short or long option names)
/// have equal operations and the same ``canonicalKey``.
///
/// ```swift
/// var operations = ImageOperations()
/// operations.resizeMode = .fill
/// operations.width = 300
/// operations.height = 200
/// print(operations.canonicalKey)   // "rs:fill;w:300;h:200"
/// ```
public struct ImageOperations: Sendable, Hashable {
    /// How the image meets the box ``width`` × ``height``.
    public enum ResizeMode: String, Sendable, Hashable, CaseIterable {
        /// Inside the box, ratio kept (thumbor `fit-in`, imgproxy `fit`).
        case fit
        /// Covers the box, the overflow cropped by ``gravity`` (thumbor `WxH`, imgproxy `fill`).
        case fill
        /// `fill`, but a smaller box keeps the image's ratio instead of growing it (imgproxy `fill-down`).
        case fillDown = "fill-down"
        /// Exactly the box, ratio not kept (imgproxy `force`, thumbor `stretch()`).
        case force
        /// `fill` when the image and the box are both portrait or both landscape, else `fit` (imgproxy `auto`).
        case auto
        /// Covers the box, nothing cropped: the smaller side meets the box (thumbor `full-fit-in`).
        case cover
    }

    /// Where a crop keeps the image, or what `fill` keeps.
    public enum Gravity: Sendable, Hashable {
        /// The middle.
        case center
        /// The top edge's middle.
        case north
        /// The bottom edge's middle.
        case south
        /// The right edge's middle.
        case east
        /// The left edge's middle.
        case west
        /// The top-right corner.
        case northEast
        /// The top-left corner.
        case northWest
        /// The bottom-right corner.
        case southEast
        /// The bottom-left corner.
        case southWest
        /// The most interesting region (edges, saturation, skin tones).
        case smart
        /// A focal point, as fractions of the width and height (0…1).
        case focalPoint(x: Double, y: Double)
        /// A focal region in source pixels (thumbor `focal(AxB:CxD)`).
        case focalRegion(left: Int, top: Int, right: Int, bottom: Int)
    }

    /// A manual crop, applied to the source before resizing.
    public enum Crop: Sendable, Hashable {
        /// Pixel edges in the source: left, top, right, bottom (thumbor `AxB:CxD`).
        case region(left: Int, top: Int, right: Int, bottom: Int)
        /// A size (pixels, or fractions when < 1) placed by a gravity (imgproxy `crop`).
        case size(width: Double, height: Double, gravity: Gravity?)
    }

    /// Removing a uniform border.
    public struct Trim: Sendable, Hashable {
        /// Which corner's colour is the border's (thumbor `top-left` / `bottom-right`).
        public enum Reference: String, Sendable, Hashable {
            /// The top-left pixel's colour.
            case topLeft = "top-left"
            /// The bottom-right pixel's colour.
            case bottomRight = "bottom-right"
        }
        /// The corner whose colour is the border's.
        public var reference: Reference
        /// How far a pixel may differ from the border colour and still be trimmed.
        public var tolerance: Double

        /// A trim from `reference`'s colour, allowing `tolerance` of colour distance.
        public init(reference: Reference = .topLeft, tolerance: Double = 0) {
            self.reference = reference
            self.tolerance = tolerance
        }
    }

    /// A colour of the operations: ImageKit's `RGBAColor` (8-bit straight RGBA), read from and
    /// written to URLs by `RGBAColor(urlText:)` and `urlHex`.
    public typealias Color = RGBAColor

    /// How `fill` (thumbor's `fill()` filter, imgproxy's `extend` with a background) paints
    /// the canvas around an image that does not cover the box.
    public enum Fill: Sendable, Hashable {
        /// A solid colour.
        case color(Color)
        /// The image itself, blurred, behind it.
        case blur
        /// The median colour of the image (each channel's median), as thumbor's `fill(auto)`.
        case auto
    }

    /// A pixel operation, applied in order after the geometry.
    public enum Filter: Sendable, Hashable {
        /// A Gaussian blur; `sigma` when given, else `radius` as the sigma (thumbor `blur(r,s)`, imgproxy `bl`).
        case blur(radius: Double, sigma: Double?)
        /// An unsharp mask: the image plus `strength` × its difference from a Gaussian blur of
        /// `sigma` (thumbor `sharpen(amount,radius,luminance_only)` is strength `amount`, sigma
        /// `radius`; imgproxy `sh:sigma` is strength 1).
        case sharpen(strength: Double, sigma: Double, luminanceOnly: Bool)
        /// Blocks of `size` × `size` pixels, each its mean colour.
        case pixelate(size: Int)
        /// Luma only, kept as RGB.
        case grayscale
        /// Adds `amount` percent of full scale to every channel (thumbor `brightness`, −100 … 100).
        case brightness(Int)
        /// Stretches the channels around mid-grey by `amount` percent (thumbor `contrast`, −100 … 100).
        case contrast(Int)
        /// Moves each channel away from the pixel's perceived brightness by this factor (thumbor `saturation`).
        case saturation(Double)
        /// Adds a percent of full scale to each channel (thumbor `rgb(r,g,b)`).
        case rgb(red: Int, green: Int, blue: Int)
        /// Moves each channel by a random amount within ±`amount`, the same for one URL every time.
        case noise(Int)
        /// Rounds the corners with radius `a`, painting outside them `color` unless `transparent`.
        case roundCorner(a: Int, b: Int, color: Color, transparent: Bool)
        /// Spreads each colour channel's histogram over the whole range (thumbor `equalize()`).
        case equalize
        /// Tone curves through control points `[x0, y0, x1, y1, …]` (x rising, 0…255): one per
        /// channel, then `all` on every channel (thumbor `curve(all,red,green,blue)`, drawn as a
        /// natural cubic spline, flat before the first point and after the last).
        case curve(all: [Int], red: [Int], green: [Int], blue: [Int])
        /// Sets the result inside the nine-patch picture at `url` (thumbor `frame`).
        case frame(url: String)
        /// Draws the image at `url` over the result at `x`, `y` with `alpha` percent transparency (thumbor `watermark`).
        case watermark(
            url: String, x: WatermarkPosition, y: WatermarkPosition, alpha: Int, widthRatio: Double?,
            heightRatio: Double?)
    }

    /// The rules a URL dialect brings with it (see ``ImageOperations/rules``).
    public struct DialectRules: Sendable, Hashable {
        /// Whose size arithmetic applies.
        public enum Geometry: String, Sendable, Hashable {
            /// thumbor 7.8's transformer, step by step, its half-to-even rounding included.
            case thumbor
            /// imgproxy's `calcScale`, `calcSizes` and `cropToResult`.
            case imgproxy
        }
        /// Whose size arithmetic applies.
        public var geometry: Geometry
        /// A vector source (SVG, PDF) grows to the box without ``ImageOperations/enlarge``
        /// (imgproxy's: vectors have no pixels to lose); thumbor treats a vector as the raster of
        /// its intrinsic size.
        public var enlargesVectors: Bool
        /// A GIF source skips the filters after the resize, `format()` included, and stays a GIF
        /// (thumbor's, without a gifsicle engine).
        public var skipsFiltersOnGIF: Bool
        /// `Accept` may turn an animation (or a GIF) into an animated WebP or AVIF when no format is
        /// asked (imgproxy's `determineOutputFormat`); thumbor keeps animations and GIFs as they are.
        public var negotiatesAnimations: Bool

        /// thumbor's rules.
        public static let thumbor = DialectRules(
            geometry: .thumbor, enlargesVectors: false, skipsFiltersOnGIF: true, negotiatesAnimations: false)
        /// imgproxy's rules.
        public static let imgproxy = DialectRules(
            geometry: .imgproxy, enlargesVectors: true, skipsFiltersOnGIF: false, negotiatesAnimations: true)

        /// Rules from each of their parts.
        public init(geometry: Geometry, enlargesVectors: Bool, skipsFiltersOnGIF: Bool, negotiatesAnimations: Bool) {
            self.geometry = geometry
            self.enlargesVectors = enlargesVectors
            self.skipsFiltersOnGIF = skipsFiltersOnGIF
            self.negotiatesAnimations = negotiatesAnimations
        }
    }

    /// Output formats the service can be asked for.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// JPEG.
        case jpeg
        /// PNG.
        case png
        /// WebP.
        case webp
        /// AVIF.
        case avif
        /// GIF (animations stay animated).
        case gif
        /// HEIC (x265 through libheif; 415 in a build without the `HEIF` trait).
        case heic
        /// JPEG XL (libjxl; 415 in a build without the `JXL` trait).
        case jxl
        /// TIFF (imgproxy only).
        case tiff
        /// BMP (imgproxy only).
        case bmp
        /// H.264 video in MP4 (imgproxy `mp4`, thumbor `gifv()`/`gifv(mp4)`, `format(mp4)`): an
        /// animation as real video. 415 without the `Video` trait.
        case mp4
        /// VP9 video in WebM (thumbor `gifv(webm)`, `format(webm)`). 415 without the `Video` trait.
        case webm
    }

    /// Frames of a video source taken at even steps and laid out as a sprite sheet or played as
    /// an animation (imgproxy's `vtt` and `vta`).
    public struct VideoStills: Sendable, Hashable {
        /// A grid, left to right then top to bottom, or an animation.
        public enum Layout: Sendable, Hashable {
            /// `columns` × `rows` tiles in one picture.
            case sprite(columns: Int, rows: Int)
            /// `frames` frames shown `delay` milliseconds each.
            case animation(frames: Int, delay: Int)
        }

        /// How the frames are laid out.
        public var layout: Layout
        /// Seconds between frames; a negative step spreads the frames over the whole video
        /// (its duration divided by the number of frames).
        public var step: Double
        /// Each frame is fitted inside this box (0 on a side: that side follows the ratio).
        public var width: Int
        /// See ``width``.
        public var height: Int
        /// Each frame is placed on a black box of exactly `width` × `height`.
        public var extend = false
        /// Frames past the video's end are left out (a sprite loses its empty rows).
        public var trim = false
        /// Each frame covers the box and is cropped to it, around ``focusX``, ``focusY``.
        public var fill = false
        /// The crop's centre as a fraction of the frame's width (with ``fill``).
        public var focusX = 0.5
        /// The crop's centre as a fraction of the frame's height (with ``fill``).
        public var focusY = 0.5

        /// The number of frames the layout needs.
        public var count: Int {
            switch layout {
            case .sprite(let columns, let rows): return columns * rows
            case .animation(let frames, _): return frames
            }
        }

        /// A layout of frames `step` seconds apart, each fitted in `width` × `height`.
        public init(layout: Layout, step: Double, width: Int, height: Int) {
            self.layout = layout
            self.step = step
            self.width = width
            self.height = height
        }
    }

    // MARK: Geometry

    /// How the image meets the box (default `fit`).
    public var resizeMode: ResizeMode = .fit
    /// The box; 0 on one side keeps the ratio, 0 on both keeps the size.
    public var width = 0
    /// The box's height (see ``width``).
    public var height = 0
    /// thumbor's `orig`: that side is the source's.
    public var widthIsOriginal = false
    /// thumbor's `orig` for the height.
    public var heightIsOriginal = false
    /// Thumbor `adaptive-`: the box turns when its orientation differs from the image's.
    public var adaptive = false
    /// Whether a smaller image grows to the box.
    public var enlarge = false
    /// The rules of the URL's dialect that change pixels or formats. They are operations like
    /// the others — in the result key and the ETag — so that no step asks which grammar a
    /// request came in, and two dialects can never share a result their rules make differ.
    public var rules = DialectRules.thumbor
    /// Whether the result is padded to the box (imgproxy `extend`, thumbor `fill()`).
    public var extend = false
    /// imgproxy `min-width`: a fit never ends narrower than this.
    public var minWidth = 0
    /// imgproxy `min-height`: a fit never ends lower than this.
    public var minHeight = 0
    /// Multiplies the box (imgproxy `zoom`, `dpr`).
    public var zoomX = 1.0
    /// The vertical zoom (imgproxy `z:X:Y`).
    public var zoomY = 1.0
    /// Device pixel ratio: the box and padding are multiplied by it.
    public var dpr = 1.0
    /// What a crop keeps (default: the centre).
    public var gravity: Gravity = .center
    /// A manual crop before resizing.
    public var crop: Crop?
    /// A uniform border removed first.
    public var trim: Trim?
    /// Padding added after resizing: top, right, bottom, left.
    public var padding: [Int]?
    /// Apply EXIF orientation (both services' default).
    public var autoRotate = true
    /// Degrees clockwise, a multiple of 90.
    public var rotate = 0
    /// Mirror left to right (thumbor `-W`, imgproxy `fl:1:0`).
    public var flipHorizontal = false
    /// Mirror top to bottom (thumbor `-H`, imgproxy `fl:0:1`).
    public var flipVertical = false
    /// The colour transparent pixels are flattened onto, and padding and canvas are painted with.
    public var background: Color?
    /// How a canvas around the image is painted (thumbor `fill()`).
    public var fill: Fill?
    /// thumbor `proportion(f)`: the result scaled by f (0 < f ≤ 1; other values do nothing).
    public var proportion: Double?
    /// Pixel filters, in the URL's order.
    public var filters: [Filter] = []
    /// Where a video source's frame is taken, in seconds from its start (imgproxy
    /// `video_thumbnail_second`, thumbor `still(N)`); nil: the service's default (1 s, like
    /// imgproxy's). An image source ignores it.
    public var videoTime: Double?
    /// A video's key frame at or before ``videoTime`` instead of its exact frame (imgproxy
    /// `video_thumbnail_keyframes`): one decode, the cheapest frame near that time.
    public var videoKeyframes = false
    /// thumbor-video-engine's `still()`: the answer is a still — an animated source answers its
    /// first frame (a video its frame at ``videoTime``, 0 unless `still(N)` says).
    public var still = false
    /// A video source's frames from ``videoTime`` on, as a sprite sheet (imgproxy
    /// `video_thumbnail_tile`) or an animation (imgproxy `video_thumbnail_animation`); the result
    /// then goes through every other operation as the source would.
    public var videoStills: VideoStills?

    // MARK: Output

    /// nil: the source's format, or the one negotiated from `Accept`.
    public var format: Format?
    /// The `best` format (imgproxy `f:best`, thumbor `format(best)`): among the formats the
    /// client accepts and the service allows, the smallest answer (``format`` stays nil).
    public var bestFormat = false
    /// The formats `best` tries for this request, set by the service from `Accept` (empty: `best`
    /// is not asked).
    var bestCandidates: [Format] = []
    /// thumbor's `gifv()`: an animated result is written as this video format (``Format/mp4``
    /// or ``Format/webm``) whatever else is asked; a still is not.
    public var animationAsVideo: Format?
    /// Lossy quality 1…100; nil: the service's default (80).
    public var quality: Int?
    /// Quality by output format (imgproxy `fq`), winning over ``quality``.
    public var formatQuality: [Format: Int] = [:]
    /// The most bytes the answer may have: quality is lowered until it fits.
    public var maxBytes: Int?
    /// imgproxy's `autoquality`: the quality chosen per image (see ``AutoQualityDefaults``).
    public var autoQuality: AutoQualityRequest?
    /// Drop EXIF and other metadata (default true).
    public var stripMetadata = true
    /// Drop the ICC profile too.
    public var stripColorProfile = false
    /// Keep the copyright fields when stripping metadata.
    public var keepCopyright = false
    /// thumbor `max_age()`: the response's `Cache-Control` max-age in seconds.
    public var maxAge: Int?
    /// imgproxy `expires`: a Unix time after which the URL answers 404.
    public var expires: Int?
    /// The file name of `Content-Disposition` (without extension).
    public var filename: String?
    /// Answer `Content-Disposition: attachment` rather than `inline`.
    public var returnAttachment = false
    /// Only part of the key (imgproxy `cachebuster`).
    public var cacheBuster: String?
    /// thumbor's `extract_focal()` while the URL is read: resolved with the source, then false.
    var extractsFocal = false
    /// Answer with the image's facts as JSON instead of the image (thumbor `meta`, imgproxy `/info`).
    public var metadataOnly = false
    /// The placeholders, colours and hashsums `/info` adds (imgproxy's `bh`, `th`, `avg`, `p`, `ph`,
    /// `dc`, `chs`).
    public var infoFacts = InfoFacts()

    /// Nothing asked: the source as it is.
    public init() {}
}
