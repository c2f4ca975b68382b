import Foundation

extension ImageOperations {
    /// Where thumbor's `watermark()` puts its image along one side: pixels from the left/top
    /// (negative: from the right/bottom), a percentage of the side (`Np`, `-Np`), `center`, or
    /// `repeat` (tiled across the image). Read when the URL is, so a bad one is a 400 before
    /// anything is fetched.
    public enum WatermarkPosition: Sendable, Hashable, CustomStringConvertible {
        /// Pixels from the left/top; negative: from the right/bottom.
        case pixels(Int)
        /// Percent of the side's length from the left/top; negative: from the right/bottom.
        case percent(Int)
        /// Centred.
        case center
        /// Tiled across the side.
        case repeated

        /// thumbor's spelling: `10`, `-10`, `20p`, `-20p`, `center` or `repeat`.
        public init(_ text: String) throws(ImageServiceError) {
            switch text {
            case "center":
                self = .center
                return
            case "repeat":
                self = .repeated
                return
            default: break
            }
            let negative = text.hasPrefix("-")
            let digits = negative ? text.dropFirst() : Substring(text)
            if digits.hasSuffix("p"), let percent = Int(digits.dropLast()), percent >= 0, percent <= 10_000 {
                self = .percent(negative ? -percent : percent)
            } else if let pixels = Int(digits), pixels >= 0, pixels <= 1 << 20 {
                self = .pixels(negative ? -pixels : pixels)
            } else {
                throw ImageServiceError(
                    .invalidFilterArgument, "watermark position '\(text)' is not a number, Np, center or repeat")
            }
        }

        /// thumbor's spelling of the position.
        public var description: String {
            switch self {
            case .pixels(let value): return String(value)
            case .percent(let value): return "\(value)p"
            case .center: return "center"
            case .repeated: return "repeat"
            }
        }
    }
}
