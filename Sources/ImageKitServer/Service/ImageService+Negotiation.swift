import ImageKit

// What a request is answered in and kept under: the negotiated format and its class of client,
// and the parsed path with what its configuration decides once.
extension ImageService {
    /// The format a request's answer is negotiated to and the class of client it is kept for.
    struct Negotiation {
        /// Whether `Accept` may choose the format (none asked, and automatic formats are on).
        var negotiable: Bool
        /// The format `Accept` allows, best first (AVIF, then WebP); nil: the default rule.
        var offered: ImageOperations.Format?
        /// The asked format, or the class of client: results are kept per class, so a result
        /// hit needs neither the source nor a decode.
        var formatClass: String

        /// The formats `best` tries (empty: `best` is not asked).
        var bestCandidates: [ImageOperations.Format] = []

        init(_ operations: ImageOperations, accept: String?, configuration: ImageServiceConfiguration) {
            let accept = accept?.lowercased() ?? ""
            if operations.format == nil && (operations.bestFormat || configuration.bestFormatByDefault) {
                bestCandidates = ImageOperations.Format.bestCandidates(
                    accept: accept, allowed: configuration.bestFormats)
                negotiable = true
                formatClass = "best:" + bestCandidates.map(\.rawValue).joined(separator: ",")
                return
            }
            negotiable = operations.format == nil && (configuration.autoWebP || configuration.autoAVIF)
            if negotiable {
                // A build without AVIF (the trait off) offers WebP instead of answering 415.
                if configuration.autoAVIF, ImageFormat.avif.isCodecSupported, accept.utf8Contains("image/avif") {
                    offered = .avif
                } else if configuration.autoWebP, accept.utf8Contains("image/webp") {
                    offered = .webp
                }
            }
            formatClass = operations.format.map { $0.rawValue } ?? "auto:" + (offered?.rawValue ?? "none")
        }

    }

    /// What the answer to one request needs besides its result.
    struct Answering {
        var request: ImageRequest
        /// The source's `Surrogate-Key`.
        var tag: String
        var negotiable: Bool
        var ifNoneMatch: String?
        var now: Int
    }

    /// A path read, with what every request for it needs and its configuration decides once.
    struct ParsedPath: Sendable {
        var request: ImageRequest
        /// The result key without the format.
        var key: String
        /// The source URL as a string (`URL.absoluteString` is not free).
        var source: String
        /// The source's `Surrogate-Key`.
        var tag: String
        /// Whether the configuration serves the source (hosts, buckets, local root).
        var isAllowed: Bool
    }
}
