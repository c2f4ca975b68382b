import Foundation

/// A quality chosen per image instead of one fixed quality for all (imgproxy's autoquality):
/// the lowest quality that still looks right, or the highest that fits a byte budget.
///
/// A flat image reaches a perceptual target at a lower quality than a busy one, so a per-image
/// search saves bytes where a fixed quality wastes them and spends them where it would show.
///
/// ```swift
/// let chosen = try ImageCodersManager.shared.encode(
///     image, as: .jpeg, options: ImageEncodingOptions(),
///     autoQuality: AutoQuality(.ssimulacra2(target: 70)))
/// print(chosen.quality, chosen.score ?? 0, chosen.data.count)
/// ```
public struct AutoQuality: Sendable, Hashable {
    /// What the search aims at.
    public enum Method: Sendable, Hashable {
        /// The highest quality whose output takes at most `bytes` (bisection). When even the
        /// lowest quality is larger, the lowest quality's output.
        case size(bytes: Int)
        /// The lowest quality whose DSSIM against the unencoded image is at most `target`;
        /// the search stops once a quality lands within `allowedError` below it.
        case dssim(target: Double, allowedError: Double = 0.002)
        /// The lowest quality whose SSIMULACRA2 score is at least `target` (≈ 90 visually
        /// lossless, ≈ 80 high, ≈ 70 web); the search stops once a quality lands within
        /// `allowedError` above it.
        case ssimulacra2(target: Double, allowedError: Double = 2)

        /// The metric a perceptual method measures with; nil for ``size(bytes:)``.
        public var metric: PerceptualMetric? {
            switch self {
            case .size: nil
            case .dssim: .dssim
            case .ssimulacra2: .ssimulacra2
            }
        }
    }

    /// What the search aims at.
    public var method: Method
    /// The qualities it may choose, on ``ImageEncodingOptions/quality``'s scale × 100.
    public var qualities: ClosedRange<Int>

    /// A search for `method` among `qualities` (clamped to 1...100).
    public init(_ method: Method, qualities: ClosedRange<Int> = 10...95) {
        self.method = method
        self.qualities = max(1, min(qualities.lowerBound, 100))...max(1, min(qualities.upperBound, 100))
    }
}

/// What an ``AutoQuality`` search chose.
public struct AutoQualityEncoding: Sendable {
    /// The encoded image.
    public var data: Data
    /// The quality it was encoded at, 1...100.
    public var quality: Int
    /// Its metric value (SSIMULACRA2 score or DSSIM) for a perceptual method; nil for
    /// ``AutoQuality/Method/size(bytes:)``, a lossless format, or an image under 8 × 8 pixels.
    public var score: Double?
    /// How many encodes the search made.
    public var encodes: Int
}

extension ImageCodersManager {
    /// Encodes `image` as `format` at the quality `autoQuality` chooses (`options.quality` is
    /// ignored). A lossless format, or `options.lossless`, is encoded once as asked. For an
    /// animation the perceptual search measures the first frame and encodes every frame at the
    /// quality chosen. With `options.maxFileSize`, a choice larger than that is bisected down
    /// as ``encode(_:as:options:)`` does.
    ///
    /// The search starts from a guess, then interpolates between the qualities it measured
    /// (secant on the score, bisection when that stalls), keeping the lowest quality that met
    /// the target; each try encodes into memory, decodes and compares against a reference
    /// prepared once (``PerceptualReference``). Typically two to four encodes.
    public func encode(
        _ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions, autoQuality: AutoQuality
    ) throws(ImageError) -> AutoQualityEncoding {
        var plain = options
        plain.maxFileSize = nil
        let bounds = autoQuality.qualities
        guard !options.lossless, Self.qualitySteps(for: format) != nil else {
            plain.quality = Double(bounds.upperBound) / 100
            return AutoQualityEncoding(
                data: try encode(image, as: format, options: plain), quality: bounds.upperBound, score: nil, encodes: 1)
        }
        var chosen: AutoQualityEncoding
        switch autoQuality.method {
        case .size(let bytes):
            chosen = try searchSize(image, as: format, options: plain, bytes: bytes, bounds: bounds)
        case .dssim(let target, let allowedError), .ssimulacra2(let target, let allowedError):
            let bitmap = image.frames[0].bitmap
            guard bitmap.width >= 8, bitmap.height >= 8, let metric = autoQuality.method.metric else {
                plain.quality = Double(bounds.upperBound) / 100
                return AutoQualityEncoding(
                    data: try encode(image, as: format, options: plain), quality: bounds.upperBound, score: nil,
                    encodes: 1)
            }
            let reference = try PerceptualReference(bitmap, metric: metric)
            let still = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: image.format)
            var search = PerceptualSearch(
                higherIsCloser: metric.higherIsCloser, target: target, allowedError: abs(allowedError), bounds: bounds,
                format: format)
            chosen = try search.run { quality throws(ImageError) in
                var tryOptions = plain
                tryOptions.quality = Double(quality) / 100
                tryOptions.firstFrameOnly = true
                let data = try encode(still, as: format, options: tryOptions)
                let decoded = try decode(data, options: ImageDecodingOptions(appliesOrientation: false))
                return (data, try reference.compare(decoded.frames[0].bitmap))
            }
            if image.frameCount > 1 && !options.firstFrameOnly {
                plain.quality = Double(chosen.quality) / 100
                chosen.data = try encode(image, as: format, options: plain)
                chosen.encodes += 1
            }
        }
        if let maxFileSize = options.maxFileSize, chosen.data.count > maxFileSize {
            var limited = options
            limited.quality = Double(chosen.quality) / 100
            chosen.data = try encode(image, as: format, options: limited)
            chosen.score = nil
        }
        return chosen
    }

    /// The highest quality in `bounds` whose output fits `bytes`: the top first (most images
    /// that fit, fit there), then the bottom, then bisection between them.
    private func searchSize(
        _ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions, bytes: Int,
        bounds: ClosedRange<Int>
    ) throws(ImageError) -> AutoQualityEncoding {
        var encodes = 0
        func encode(_ quality: Int) throws(ImageError) -> Data {
            var tryOptions = options
            tryOptions.quality = Double(quality) / 100
            encodes += 1
            return try self.encode(image, as: format, options: tryOptions)
        }
        var high = bounds.upperBound
        let top = try encode(high)
        if top.count <= bytes { return AutoQualityEncoding(data: top, quality: high, score: nil, encodes: encodes) }
        var low = bounds.lowerBound
        var fitting = try encode(low)
        guard fitting.count <= bytes, low < high else {
            return AutoQualityEncoding(data: fitting, quality: low, score: nil, encodes: encodes)
        }
        // Invariant: `low` fits, `high` does not.
        while high - low > 1 {
            let middle = (low + high) / 2
            let data = try encode(middle)
            if data.count <= bytes { (low, fitting) = (middle, data) } else { high = middle }
        }
        return AutoQualityEncoding(data: fitting, quality: low, score: nil, encodes: encodes)
    }
}

/// The perceptual search: the lowest quality in `bounds` whose score meets `target`.
struct PerceptualSearch {
    /// SSIMULACRA2 (higher is closer) or DSSIM.
    let higherIsCloser: Bool
    let target: Double
    let allowedError: Double
    let bounds: ClosedRange<Int>
    /// Tries after which the best quality found so far is kept.
    static let maxTries = 6
    /// A quality that met the target this close above one that missed it is kept: a step lower
    /// saves about 1.5 % of the bytes, less than another encode is worth.
    static let closeEnough = 2

    private var tried: [(quality: Int, score: Double, data: Data)] = []

    /// Where the first guess moves for `format`: WebP reaches a score at a higher quality number
    /// than JPEG, AVIF at a lower one (means over the bench's images at SSIMULACRA2 70: JPEG
    /// 62.7, WebP 65.2, AVIF 56.4; AVIF's search was fastest from 5 below JPEG's, not 7). How busy
    /// an image is (its mean local deviation) predicted the quality no better than the mean.
    let guessOffset: Int

    init(higherIsCloser: Bool, target: Double, allowedError: Double, bounds: ClosedRange<Int>, format: ImageFormat) {
        self.higherIsCloser = higherIsCloser
        self.guessOffset = format == .webp ? 2 : format == .avif ? -5 : 0
        self.target = target
        self.allowedError = allowedError
        self.bounds = bounds
    }

    func meets(_ score: Double) -> Bool { higherIsCloser ? score >= target : score <= target }

    /// How far `score` is past the target on the good side (negative: short of it), in the
    /// metric's units; DSSIM in log space, where it is near linear in quality.
    private func margin(_ score: Double) -> Double {
        higherIsCloser ? score - target : log(max(target, 1e-9)) - log(max(score, 1e-9))
    }

    mutating func run(
        _ measure: (Int) throws(ImageError) -> (Data, Double)
    ) throws(ImageError) -> AutoQualityEncoding {
        var quality = firstGuess()
        while true {
            let (data, score) = try measure(quality)
            tried.append((quality, score, data))
            if meets(score), abs(score - target) <= allowedError { break }
            guard tried.count < Self.maxTries, let next = nextQuality() else { break }
            quality = next
        }
        if let best = tried.filter({ meets($0.score) }).min(by: { $0.quality < $1.quality }) {
            return AutoQualityEncoding(data: best.data, quality: best.quality, score: best.score, encodes: tried.count)
        }
        // Nothing met the target: the highest quality allowed is the closest there is.
        if let top = tried.first(where: { $0.quality == bounds.upperBound }) {
            return AutoQualityEncoding(data: top.data, quality: top.quality, score: top.score, encodes: tried.count)
        }
        let (data, score) = try measure(bounds.upperBound)
        return AutoQualityEncoding(data: data, quality: bounds.upperBound, score: score, encodes: tried.count + 1)
    }

    /// JPEG's SSIMULACRA2 rises about 0.65 per quality point between 30 and 90 and reaches 70
    /// near quality 63; other formats and DSSIM start from the middle and interpolate from there.
    private func firstGuess() -> Int {
        let guess =
            higherIsCloser
            ? Int((target * 1.55 - 45).rounded()) + guessOffset : (bounds.lowerBound + bounds.upperBound) / 2
        return min(max(guess, bounds.lowerBound), bounds.upperBound)
    }

    /// The next quality strictly between the highest that failed and the lowest that met the
    /// target; nil when the two are at most ``closeEnough`` apart (another encode would save
    /// less than it costs) or nothing is left between them.
    private func nextQuality() -> Int? {
        let failing = tried.filter { !meets($0.score) }.map(\.quality).max() ?? (bounds.lowerBound - 1)
        let meeting = tried.filter { meets($0.score) }.map(\.quality).min() ?? (bounds.upperBound + 1)
        if meeting <= bounds.upperBound, failing >= bounds.lowerBound, meeting - failing <= Self.closeEnough {
            return nil
        }
        let low = failing + 1, high = meeting - 1
        guard low <= high else { return nil }
        let last = tried[tried.count - 1]
        var estimate: Double
        if let previous = tried.dropLast().last, previous.quality != last.quality,
            margin(previous.score) != margin(last.score)
        {
            let slope = (margin(last.score) - margin(previous.score)) / Double(last.quality - previous.quality)
            estimate = slope > 0 ? Double(last.quality) - margin(last.score) / slope : Double(low + high) / 2
        } else {
            let slope = higherIsCloser ? 0.65 : 0.05
            estimate = Double(last.quality) - margin(last.score) / slope
        }
        // Aim a little past the target on the good side, so the try usually meets it.
        estimate += meets(last.score) ? 0.5 : 1
        if !estimate.isFinite { estimate = Double(low + high) / 2 }
        return min(max(Int(estimate.rounded()), low), high)
    }
}
