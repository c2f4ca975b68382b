import Foundation
import ImageKit

/// One parsed image request: which grammar it came in, its signature and the exact text the
/// signature covers, the operations and the source URL.
public struct ImageRequest: Sendable, Hashable {
    /// The URL grammar a request came in.
    public enum Grammar: String, Sendable, Hashable {
        /// thumbor's: `/unsafe/…` or `/<28-character signature>/…`.
        case thumbor
        /// imgproxy's: `/insecure/…`, `/_/…` or `/<43-character signature>/…`.
        case imgproxy
    }

    /// Which grammar the path used (decided by its first segment).
    public var grammar: Grammar
    /// nil for unsigned URLs (thumbor `unsafe`, imgproxy `insecure` and `_`).
    public var signature: String?
    /// The part of the path the signature is computed over, as received.
    public var signedPath: String
    /// What the request asks for, grammar-free.
    public var operations: ImageOperations
    /// The absolute http(s) URL of the source image.
    public var source: URL

    /// A request from its parts (renderers and tests build them).
    public init(grammar: Grammar, signature: String?, signedPath: String, operations: ImageOperations, source: URL) {
        self.grammar = grammar
        self.signature = signature
        self.signedPath = signedPath
        self.operations = operations
        self.source = source
    }

    /// Parses a request path (`/unsafe/300x200/…`, `/insecure/rs:fit:300:300/plain/…`,
    /// `/info/_/…`) by its first segment, percent-decoded: `unsafe` or a 28-character thumbor
    /// signature → thumbor; `insecure`, `_`, or a 43-character imgproxy signature → imgproxy;
    /// `info` → imgproxy's info endpoint; anything else → 400.
    public static func parse(path: String, presets: [String: [String]] = [:]) throws(ImageServiceError) -> ImageRequest
    {
        guard path.hasPrefix("/") else { throw .malformed("the path must start with '/'") }
        let body = path.dropFirst()
        guard let slash = body.firstIndex(of: "/") else { throw .malformed("the path has no image") }
        let first = String(body[..<slash])
        let decoded = first.percentDecoded ?? first
        if first == "info" {
            var request = try ImgproxyURL.parse(
                String(body[body.index(after: slash)...]).withLeadingSlash, presets: presets)
            request.operations.metadataOnly = true
            return request
        }
        if decoded == "unsafe" || decoded.count == 28 { return try ThumborURL.parse(path) }
        if decoded == "insecure" || decoded == "_" || decoded.count == 43 {
            return try ImgproxyURL.parse(path, presets: presets)
        }
        throw .malformed("'\(first.prefix(64))' is neither a thumbor nor an imgproxy signature")
    }

    /// The source as a request path carries it (percent-decoded once when it has no `://`):
    /// a URL with a scheme as written (`https://…`, `s3://…`, `local:///…`, also with its `//`
    /// merged by a proxy: the service's loader for the scheme reads it), or a bare host with
    /// `http://` added (thumbor's default). Whether a scheme is served is the service's
    /// question, answered by its source loaders.
    static func sourceURL(_ text: String, addsScheme: Bool) throws(ImageServiceError) -> URL {
        var text = text
        if !text.utf8Contains("://"), let decoded = text.percentDecoded { text = decoded }
        if !hasScheme(text) {
            guard addsScheme else { throw .malformed("the source is not an absolute URL") }
            text = "http://" + text
        }
        guard
            let url = URL(string: text)
                ?? URL(string: text.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed) ?? ""),
            url.scheme != nil
        else {
            throw .malformed("the source is not a valid URL")
        }
        return url
    }

    /// Whether `text` starts with a scheme and a slash (`https:/`, `s3:/`): a host with a port
    /// (`example.com:8080/a.jpg`) has none.
    private static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon > text.startIndex,
            text[text.index(after: colon)...].hasPrefix("/")
        else { return false }
        let scheme = text[..<colon]
        return scheme.first!.isLetter
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }
}

extension String {
    var withLeadingSlash: String { hasPrefix("/") ? self : "/" + self }

    /// `removingPercentEncoding` without Foundation's round trip through an NSString for the
    /// usual text with no `%` in it (a few microseconds a request): nil when an escape is broken.
    var percentDecoded: String? { utf8.contains(UInt8(ascii: "%")) ? removingPercentEncoding : self }
}

extension ImageRequest {
    /// Whether `signature` signs this request in its grammar: thumbor's HMAC-SHA1 or imgproxy's
    /// HMAC-SHA256, compared in constant time; false when the grammar has no key configured.
    func isSigned(with signature: String, thumbor: ThumborSigner?, imgproxy: ImgproxySigner?) -> Bool {
        switch grammar {
        case .thumbor: thumbor?.isValid(signature, for: signedPath) ?? false
        case .imgproxy: imgproxy?.isValid(signature, for: signedPath) ?? false
        }
    }
}
