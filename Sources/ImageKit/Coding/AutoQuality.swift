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
                format: format, detail: { reference.detail })
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
    /// Where qualities are placed so that one image's score is near a line of slope 1 in them.
    let scale: QualityScale
    /// The encoder's quality levels (AVIF has 64): qualities on one level encode alike.
    let levels: Int
    /// Tries after which the best quality found so far is kept.
    static let maxTries = 6
    /// A quality that met the target this close above one that missed it is kept: a step lower
    /// saves about 1.5 % of the bytes, less than another encode is worth.
    static let closeEnough = 2

    /// The image's distortion as a multiple of a typical photo's, expected from its detail; nil
    /// where the format has no model of it (the typical photo's is taken).
    let expectedRatio: Double?

    private var tried: [(quality: Int, score: Double, data: Data)] = []

    init(
        higherIsCloser: Bool, target: Double, allowedError: Double, bounds: ClosedRange<Int>, format: ImageFormat,
        detail: () -> Double = { 0 }
    ) {
        self.higherIsCloser = higherIsCloser
        self.target = target
        self.allowedError = allowedError
        self.bounds = bounds
        self.scale = QualityScale(format: format, higherIsCloser: higherIsCloser)
        self.levels = ImageCodersManager.qualitySteps(for: format)?.upperBound ?? 100
        self.expectedRatio = higherIsCloser ? QualityScale.distortionRatio(format, detail: detail) : nil
    }

    /// The encoder's level for `quality`, as the coders map it (AVIF's quantizer, reversed).
    private func level(_ quality: Int) -> Int { Int((Double(levels) * (1 - Double(quality) / 100)).rounded()) }

    func meets(_ score: Double) -> Bool { higherIsCloser ? score >= target : score <= target }

    /// How far `score` is past the target on the good side (negative: short of it), in the
    /// metric's units; DSSIM in log space, where it is near linear in quality.
    private func margin(_ score: Double) -> Double {
        higherIsCloser ? score - target : log(max(target, 1e-9)) - log(max(score, 1e-9))
    }

    /// The margin each try aims at: for SSIMULACRA2 3/8 into the band a search may stop in (0.75
    /// of the default 2; over the bench's photos, 0.5 to 1 needed about as few tries, 0.75 the
    /// fewest across JPEG, WebP and AVIF together), for DSSIM its middle.
    private var aim: Double {
        higherIsCloser
            ? allowedError * 3 / 8 : (log(max(target, 1e-9)) - log(max(target - allowedError, target / 2))) / 2
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

    /// Where a typical photo scores the target, a little past it — or a photo as detailed as
    /// this one, where the format has a model of that; DSSIM starts from the middle.
    private func firstGuess() -> Int {
        let guess: Int
        if !higherIsCloser {
            guess = (bounds.lowerBound + bounds.upperBound) / 2
        } else if let expectedRatio {
            guess = Int(scale.quality(at: 100 - (100 - (target + aim)) / expectedRatio).rounded())
        } else {
            guess = Int(scale.quality(at: target + aim).rounded())
        }
        return min(max(guess, bounds.lowerBound), bounds.upperBound)
    }

    /// The next quality strictly between the highest that failed and the lowest that met the
    /// target, on a level not tried yet — a secant on the scale through the last two tries, or
    /// from one try its distortion's ratio to the typical one — or nil when the two are at most
    /// ``closeEnough`` apart (another encode would save less than it costs) or nothing is left
    /// between them.
    private func nextQuality() -> Int? {
        let failing = tried.filter { !meets($0.score) }.map(\.quality).max() ?? (bounds.lowerBound - 1)
        let meeting = tried.filter { meets($0.score) }.map(\.quality).min() ?? (bounds.upperBound + 1)
        if meeting <= bounds.upperBound, failing >= bounds.lowerBound, meeting - failing <= Self.closeEnough {
            return nil
        }
        let low = failing + 1, high = meeting - 1
        guard low <= high else { return nil }
        let last = tried[tried.count - 1]
        let lastPosition = scale.position(Double(last.quality))
        var estimate: Double
        if let previous = tried.dropLast().last {
            let run = lastPosition - scale.position(Double(previous.quality))
            let rise = margin(last.score) - margin(previous.score)
            let slope = run != 0 && rise / run > 0 ? rise / run : 1
            estimate = scale.quality(at: lastPosition + (aim - margin(last.score)) / slope)
        } else if higherIsCloser, lastPosition < 100, last.score < 100 {
            // After one try, the image's distortion (100 − score) is taken as a multiple of a
            // typical photo's at the same quality: a busy image's falls faster with quality.
            let ratio = (100 - last.score) / (100 - lastPosition)
            estimate = scale.quality(at: 100 - (100 - (target + aim)) / ratio)
        } else {
            estimate = scale.quality(at: lastPosition + aim - margin(last.score))
        }
        if !estimate.isFinite { estimate = Double(low + high) / 2 }
        var next = min(max(Int(estimate.rounded()), low), high)
        let triedLevels = Set(tried.map { level($0.quality) })
        if triedLevels.contains(level(next)) {
            // That quality encodes as one already tried: the nearest that does not, if any.
            let untried = (low...high).filter { !triedLevels.contains(level($0)) }
            guard let nearest = untried.min(by: { abs(Double($0) - estimate) < abs(Double($1) - estimate) })
            else { return nil }
            next = nearest
        }
        return next
    }
}

/// Qualities placed where a typical image's SSIMULACRA2 score is (the format's mean curve over
/// photos), so that one image's score is close to a line of slope 1 on it, shifted by how busy the
/// image is: WebP's quality, say, buys twice as much score above 75 as below. DSSIM (in log
/// space) and formats without a curve use the quality itself, scaled to the same slope.
struct QualityScale {
    /// Typical scores at qualities 10, 15, …, 100, rising.
    let curve: [Double]?
    /// Where there is no curve, a line: metric units per quality step, and the score at
    /// quality 0. SSIMULACRA2's is JPEG's between 30 and 90 (about 0.65 per step, 70 near 63).
    let slope: Double, intercept: Double

    init(format: ImageFormat, higherIsCloser: Bool) {
        curve = higherIsCloser ? Self.typicalSSIMULACRA2(format) : nil
        (slope, intercept) = higherIsCloser ? (1 / 1.55, 45 / 1.55) : (0.05, 0)
    }

    /// Mean SSIMULACRA2 at qualities 10, 15, …, 100 of photos fitted in 800 × 800: `bench-serve`'s
    /// photos 24–71 (24–47 for JPEG XL and HEIC, whose last point was raised to keep it rising).
    static func typicalSSIMULACRA2(_ format: ImageFormat) -> [Double]? {
        switch format {
        case .jpeg:
            [
                -11.9, 15.6, 31.5, 42.1, 49.4, 55.3, 58.8, 62.0, 65.2, 67.3, 69.1, 72.0, 74.4, 77.4, 80.2, 83.2, 86.6,
                89.9, 94.5,
            ]
        case .webp:
            [
                29.6, 36.3, 41.7, 46.1, 50.0, 53.6, 56.5, 59.2, 61.5, 63.5, 65.4, 67.2, 69.0, 70.6, 75.2, 79.4, 83.9,
                87.8, 89.9,
            ]
        case .avif:
            [
                -18.1, -6.4, 8.8, 19.4, 29.7, 38.7, 46.9, 54.6, 60.7, 67.6, 72.1, 75.3, 77.5, 79.9, 82.3, 85.6, 88.6,
                91.1, 94.2,
            ]
        case .jpegXL:
            [
                22.9, 33.6, 44.7, 52.5, 56.3, 58.1, 60.0, 62.4, 64.4, 68.3, 70.5, 72.8, 75.2, 78.2, 80.2, 83.9, 87.7,
                92.1, 97.3,
            ]
        case .heic:
            [
                6.6, 23.7, 34.3, 48.2, 56.2, 66.2, 71.8, 78.4, 82.1, 86.3, 88.4, 90.7, 91.8, 93.1, 93.7, 94.2, 94.5,
                94.6, 94.7,
            ]
        default: nil
        }
    }

    /// An image's SSIMULACRA2 distortion (100 − score) as a multiple of a typical photo's near
    /// the curve's 70, from its ``PerceptualReference/detail``: `exp(a + b·ln detail)`, fitted
    /// on bench-serve photos 24–71. Only JPEG XL has one: there images spread widely (a flat one
    /// needs q15 for 70, a busy one q77) and it saves half a try; for JPEG and WebP it saved
    /// nothing. Nil for a format without one.
    static func distortionRatio(_ format: ImageFormat, detail: () -> Double) -> Double? {
        let model: (a: Double, b: Double)
        switch format {
        case .jpegXL: model = (a: 0.9447, b: 0.2478)
        default: return nil
        }
        let detail = detail()  // read only where a model uses it: a pass over the image
        guard detail.isFinite, detail > 0 else { return nil }
        return min(max(exp(model.a + model.b * log(detail)), 0.25), 4)
    }

    /// Where `quality` sits on the scale (linear between the curve's points, extended past its
    /// ends by the nearest segment).
    func position(_ quality: Double) -> Double {
        guard let curve else { return intercept + quality * slope }
        let index = min(max(Int(((quality - 10) / 5).rounded(.down)), 0), curve.count - 2)
        let fraction = (quality - Double(10 + 5 * index)) / 5
        return curve[index] + (curve[index + 1] - curve[index]) * fraction
    }

    /// The quality at `position` (the inverse of ``position(_:)``).
    func quality(at position: Double) -> Double {
        guard let curve else { return (position - intercept) / slope }
        var index = curve.count - 2
        for segment in 0..<(curve.count - 1) where position <= curve[segment + 1] {
            index = segment
            break
        }
        let fraction = (position - curve[index]) / (curve[index + 1] - curve[index])
        return Double(10 + 5 * index) + 5 * fraction
    }
}
