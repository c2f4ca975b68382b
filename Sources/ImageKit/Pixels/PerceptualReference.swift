internal import CImageCodecs

/// A metric of how different an image looks from another.
public enum PerceptualMetric: String, Sendable, Hashable, CaseIterable {
    /// SSIMULACRA2 (libjxl's metric, the one recent codec work is tuned on): 100 means
    /// identical; about 90 is visually lossless, 80 high quality, 70 typical web quality, 50
    /// visibly degraded. It can go below 0.
    case ssimulacra2
    /// DSSIM (structural dissimilarity, as in kornelski's dssim, which imgproxy's `aq:dssim`
    /// targets): 1 / SSIM − 1 over multi-scale CIE L*a*b*. 0 means identical; 0.001 is hard to
    /// see, 0.02 (imgproxy's default target) a typical web compromise.
    case dssim

    /// Whether a larger value means closer to the reference (SSIMULACRA2) rather than further
    /// from it (DSSIM).
    public var higherIsCloser: Bool { self == .ssimulacra2 }
}

/// A reference image prepared for comparisons: its half of the metric's work (colour transform,
/// scales, local means and variances) is done once, so comparing many encodings of it — what a
/// quality search does — costs only their half each.
///
/// Both images are RGBA8 of the same size, at least 8 × 8 pixels; transparent pixels are seen
/// over mid grey. Comparisons may run concurrently.
///
/// ```swift
/// let reference = try PerceptualReference(original, metric: .ssimulacra2)
/// let score = try reference.compare(try coders.decode(jpegData, options: .init()).frames[0].bitmap)
/// ```
public final class PerceptualReference: Sendable {
    /// The metric this reference was prepared for.
    public let metric: PerceptualMetric
    /// The size every compared image must have.
    public let width: Int
    /// The size every compared image must have.
    public let height: Int
    // Read-only after init: ik_quality_compare only reads the reference.
    private nonisolated(unsafe) let reference: OpaquePointer

    /// Prepares `bitmap` as the reference. Throws `invalidArgument` below 8 × 8 pixels and
    /// `internalError` when memory runs out (it keeps about 64 bytes per pixel: its scales and one
    /// comparison's working memory; a freed reference's memory is kept for the next one, up to
    /// 32 MB a core).
    public init(_ bitmap: Bitmap, metric: PerceptualMetric) throws(ImageError) {
        guard bitmap.width >= 8, bitmap.height >= 8 else {
            throw ImageError(.invalidArgument, "a perceptual comparison needs at least 8 × 8 pixels")
        }
        let cMetric = metric == .ssimulacra2 ? IK_QUALITY_SSIMULACRA2 : IK_QUALITY_DSSIM
        let made = bitmap.withUnsafeBytes { bytes in
            ik_quality_reference_create(
                cMetric, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bitmap.bytesPerRow,
                Int32(bitmap.width), Int32(bitmap.height))
        }
        guard let made else { throw ImageError(.internalError, "out of memory for a perceptual reference") }
        self.reference = made
        self.metric = metric
        self.width = bitmap.width
        self.height = bitmap.height
    }

    deinit { ik_quality_reference_free(reference) }

    /// How much fine detail the reference has: the mean absolute Laplacian of its luma in the
    /// metric's space (0 for a flat image, about 0.01 for a typical photo in SSIMULACRA2's). A
    /// busier image needs a higher quality for the same score; a quality search starts from it.
    /// Computed on each read, in one pass over the image.
    public var detail: Double { ik_quality_reference_detail(reference) }

    /// The metric's value for `bitmap` against the reference (see ``PerceptualMetric`` for the
    /// scale). Throws `invalidArgument` when the sizes differ.
    public func compare(_ bitmap: Bitmap) throws(ImageError) -> Double {
        guard bitmap.width == width, bitmap.height == height else {
            throw ImageError(
                .invalidArgument,
                "compared \(bitmap.width) × \(bitmap.height) pixels with a \(width) × \(height) reference")
        }
        let value = bitmap.withUnsafeBytes { bytes in
            ik_quality_compare(reference, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bitmap.bytesPerRow)
        }
        guard !value.isNaN else { throw ImageError(.internalError, "out of memory for a perceptual comparison") }
        return value
    }
}

extension Bitmap {
    /// The SSIMULACRA2 score of `distorted` against this image (100: identical; see
    /// ``PerceptualMetric/ssimulacra2``). Both the same size, at least 8 × 8 pixels.
    public func ssimulacra2(of distorted: Bitmap) throws(ImageError) -> Double {
        try PerceptualReference(self, metric: .ssimulacra2).compare(distorted)
    }

    /// The DSSIM of `distorted` against this image (0: identical; see ``PerceptualMetric/dssim``).
    public func dssim(of distorted: Bitmap) throws(ImageError) -> Double {
        try PerceptualReference(self, metric: .dssim).compare(distorted)
    }
}
