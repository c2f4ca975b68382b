import Foundation
import ImageKit

extension ImageOperations {
    /// imgproxy's `autoquality` (`aq:%method:%target:%min_quality:%max_quality:%allowed_error`)
    /// as a URL asked it: each part left out takes the service's ``AutoQualityDefaults``.
    public struct AutoQualityRequest: Sendable, Hashable {
        /// How the quality is chosen.
        public enum Method: String, Sendable, Hashable, CaseIterable {
            /// The fixed quality (turns off an operator's default).
            case none
            /// The highest quality whose answer fits `target` bytes.
            case size
            /// The lowest quality whose DSSIM is at most `target` (imgproxy's method).
            case dssim
            /// The lowest quality whose SSIMULACRA2 score is at least `target` (ImageKit's).
            case ssimulacra2
        }

        /// nil: the service's method.
        public var method: Method?
        /// Bytes for `size`, a DSSIM or a SSIMULACRA2 score; nil: the default.
        public var target: Double?
        /// The lowest quality the search may choose (1…100); nil: the default.
        public var minQuality: Int?
        /// The highest quality the search may choose (1…100); nil: the default.
        public var maxQuality: Int?
        /// How close to the target is close enough (`dssim`, `ssimulacra2`); nil: the default.
        public var allowedError: Double?

        /// A request; every part optional.
        public init(
            method: Method? = nil, target: Double? = nil, minQuality: Int? = nil, maxQuality: Int? = nil,
            allowedError: Double? = nil
        ) {
            self.method = method
            self.target = target
            self.minQuality = minQuality
            self.maxQuality = maxQuality
            self.allowedError = allowedError
        }

        /// imgproxy's arguments, `method:target:min:max:error`, any of them empty or left out.
        init(arguments: [String], option: String) throws(ImageServiceError) {
            func invalid(_ message: String) -> ImageServiceError {
                ImageServiceError(.invalidOption, "\(option): \(message)")
            }
            guard arguments.count <= 5 else { throw invalid("takes at most method:target:min:max:allowed_error") }
            func part(_ index: Int) -> String? {
                index < arguments.count && !arguments[index].isEmpty ? arguments[index] : nil
            }
            if let text = part(0) {
                guard let method = Method(rawValue: text) else {
                    throw invalid("'\(text)' is not none, size, dssim or ssimulacra2")
                }
                self.method = method
            }
            if let text = part(1) {
                guard let target = Double(text), target.isFinite, target >= 0 else {
                    throw invalid("'\(text)' is not a target")
                }
                self.target = target
            }
            for index in 2...3 {
                guard let text = part(index) else { continue }
                guard let quality = Int(text), (1...100).contains(quality) else {
                    throw invalid("'\(text)' is not a quality in 1...100")
                }
                if index == 2 { minQuality = quality } else { maxQuality = quality }
            }
            if let text = part(4) {
                guard let error = Double(text), error.isFinite, error >= 0 else {
                    throw invalid("'\(text)' is not an allowed error")
                }
                allowedError = error
            }
            if let minQuality, let maxQuality, minQuality > maxQuality {
                throw invalid("the lowest quality is above the highest")
            }
        }

        /// The arguments in imgproxy's spelling, trailing empty parts left out (also the key's
        /// term).
        var arguments: [String] {
            var parts = [
                method?.rawValue ?? "", target.map(ImageOperations.number) ?? "", minQuality.map(String.init) ?? "",
                maxQuality.map(String.init) ?? "", allowedError.map(ImageOperations.number) ?? "",
            ]
            while parts.last == "" { parts.removeLast() }
            return parts
        }
    }
}

/// The operator's autoquality (imgproxy's `IMGPROXY_AUTOQUALITY_*`, `imagekit serve
/// --autoquality`): what a URL that says nothing of it gets, and the defaults of the parts an
/// `aq:` option leaves out.
///
/// Defaults by method: `ssimulacra2` targets 70 between qualities 10 and 95, allowed error 2;
/// `dssim` targets 0.02 between 70 and 80 (AVIF 60 and 65), allowed error 0.002 — imgproxy's; `size`
/// has no default target, and imgproxy's bounds. A URL with its own quality (`q`, `fq`,
/// `quality()`) keeps it unless it also asks `aq`.
public struct AutoQualityDefaults: Sendable, Hashable {
    /// The method for URLs that ask none (`none`: a fixed quality).
    public var method: ImageOperations.AutoQualityRequest.Method = .none
    /// The target; nil: the method's default.
    public var target: Double?
    /// The lowest quality; nil: the method's default.
    public var minQuality: Int?
    /// The highest quality; nil: the method's default.
    public var maxQuality: Int?
    /// The lowest quality by format (imgproxy's `IMGPROXY_AUTOQUALITY_FORMAT_MIN`).
    public var formatMinQuality: [ImageOperations.Format: Int] = [:]
    /// The highest quality by format (imgproxy's `IMGPROXY_AUTOQUALITY_FORMAT_MAX`).
    public var formatMaxQuality: [ImageOperations.Format: Int] = [:]
    /// The allowed error; nil: the method's default.
    public var allowedError: Double?
    /// Answers of more pixels than this take the fixed quality (imgproxy's
    /// `IMGPROXY_AUTOQUALITY_MAX_RESOLUTION`; 0: no limit). 4 MP by default, unlike imgproxy's 0:
    /// a perceptual search keeps about 64 bytes of metric state per pixel while it runs.
    public var maxResolution = 4_000_000

    /// Off: every answer at its fixed quality unless its URL asks `aq`.
    public init() {}

    /// Defaults from imgproxy's option spelling, `method:target:min:max:allowed_error` (any part
    /// empty or left out: the method's default), as `imagekit serve --autoquality` takes them.
    public init(_ text: String) throws(ImageServiceError) {
        let request = try ImageOperations.AutoQualityRequest(
            arguments: text.split(separator: ":", omittingEmptySubsequences: false).map(String.init),
            option: "autoquality")
        method = request.method ?? .none
        target = request.target
        minQuality = request.minQuality
        maxQuality = request.maxQuality
        allowedError = request.allowedError
    }

    /// Qualities by format from imgproxy's `jpeg=70,avif=40,webp=60` (`FORMAT_MIN`/`FORMAT_MAX`).
    public static func formatQualities(_ text: String) throws(ImageServiceError) -> [ImageOperations.Format: Int] {
        var qualities: [ImageOperations.Format: Int] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2,
                let format = ImageOperations.Format(rawValue: parts[0] == "jpg" ? "jpeg" : parts[0]),
                let quality = Int(parts[1]), (1...100).contains(quality)
            else {
                throw ImageServiceError(.invalidOption, "'\(pair)' is not format=quality (1...100)")
            }
            qualities[format] = quality
        }
        return qualities
    }

    /// The search for an answer in `format` of `pixels` pixels; nil: the fixed quality.
    func search(
        for request: ImageOperations.AutoQualityRequest?, hasOwnQuality: Bool, format: ImageOperations.Format,
        pixels: Int
    ) -> AutoQuality? {
        let method = request?.method ?? (hasOwnQuality && request == nil ? .none : self.method)
        guard method != .none, let encodable = format.encodableFormat,
            ImageCodersManager.qualitySteps(for: encodable) != nil, maxResolution <= 0 || pixels <= maxResolution
        else { return nil }
        let sameMethod = method == self.method
        let isPerceptual = method == .ssimulacra2
        let low =
            request?.minQuality ?? formatMinQuality[format] ?? minQuality
            ?? (isPerceptual ? 10 : format == .avif ? 60 : 70)
        let high =
            request?.maxQuality ?? formatMaxQuality[format] ?? maxQuality
            ?? (isPerceptual ? 95 : format == .avif ? 65 : 80)
        let qualities = min(low, high)...max(low, high)
        let target = request?.target ?? (sameMethod ? self.target : nil)
        let error = request?.allowedError ?? (sameMethod ? allowedError : nil)
        switch method {
        case .none: return nil
        case .size:
            guard let target else { return nil }
            return AutoQuality(.size(bytes: Int(target)), qualities: qualities)
        case .dssim:
            return AutoQuality(.dssim(target: target ?? 0.02, allowedError: error ?? 0.002), qualities: qualities)
        case .ssimulacra2:
            return AutoQuality(.ssimulacra2(target: target ?? 70, allowedError: error ?? 2), qualities: qualities)
        }
    }
}

/// What autoquality chose for an answer: its `X-ImageKit-Quality` header and access-log field.
public struct AutoQualityChoice: Sendable, Hashable {
    /// The quality the answer was encoded at.
    public var quality: Int
    /// The metric the search measured with (nil for `size`).
    public var metric: PerceptualMetric?
    /// The answer's value of that metric.
    public var score: Double?
    /// The encodes the search made.
    public var encodes: Int

    /// `72; encodes=2`, or `72; ssimulacra2=70.41; encodes=3` for a perceptual search.
    public var headerValue: String {
        guard let metric, let score else { return "\(quality); encodes=\(encodes)" }
        let places = metric == .dssim ? 5 : 2
        let scale = Double(Int(pow(10, Double(places)))), rounded = (score * scale).rounded() / scale
        return "\(quality); \(metric.rawValue)=\(rounded); encodes=\(encodes)"
    }
}
