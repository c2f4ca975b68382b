import Foundation

/// imgproxy 3's processing URL: `/SIG/OPTION/OPTION/…/plain/PERCENT-ENCODED-URL[@EXT]` or
/// `/SIG/OPTION/…/BASE64URL-URL[.EXT]` (the base64 part may be split by `/`).
///
/// Options are `name:arg:arg`, by full or short name; `preset:NAME` (`pr`) expands a preset
/// given to the parser (`--preset NAME=OPTIONS`, OPTIONS slash-separated). An unknown option
/// is a 400 naming it.
///
/// ```swift
/// let request = try ImgproxyURL.parse("/insecure/rs:fill:300:200/g:sm/plain/https://example.com/cat.jpg@webp")
/// request.operations.resizeMode   // .fill
/// ```
public enum ImgproxyURL {
    /// Parses an imgproxy path (signature segment included) with `presets` for `pr:`; throws 400s for malformed or unknown options.
    public static func parse(_ path: String, presets: [String: [String]] = [:]) throws(ImageServiceError)
        -> ImageRequest
    {
        guard path.hasPrefix("/") else { throw .malformed("the path must start with '/'") }
        let body = path.dropFirst()
        guard let slash = body.firstIndex(of: "/") else { throw .malformed("the path has no image") }
        let first = String(body[..<slash])
        let signature: String? = first == "insecure" || first == "_" ? nil : first
        let signedPath = String(body[slash...])
        var segments = signedPath.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)[
            ...]

        var operations = ImageOperations()
        operations.rules = .imgproxy
        if let defaults = presets["default"] { try apply(defaults, to: &operations, presets: presets, depth: 1) }
        var options: [String] = []
        while let segment = segments.first, segment != "plain", segment != "enc", segment.contains(":") {
            options.append(segment)
            segments = segments.dropFirst()
        }
        try apply(options, to: &operations, presets: presets, depth: 0)

        guard let next = segments.first else { throw .malformed("the path has no source URL") }
        let source: URL
        var extensionName: String?
        if next == "enc" {
            throw ImageServiceError(.unsupportedSource, "encrypted source URLs are not supported")
        } else if next == "plain" {
            var text = segments.dropFirst().joined(separator: "/")
            if let at = text.lastIndex(of: "@") {
                extensionName = String(text[text.index(after: at)...])
                text = String(text[..<at])
            }
            guard !text.isEmpty else { throw .malformed("the path has no source URL") }
            guard let decoded = text.percentDecoded else {
                throw .malformed("the source URL's percent-encoding is broken")
            }
            source = try ImageRequest.sourceURL(decoded, addsScheme: false)
        } else {
            var text = segments.joined()
            if let dot = text.lastIndex(of: ".") {
                extensionName = String(text[text.index(after: dot)...])
                text = String(text[..<dot])
            }
            guard let data = Base64URL.decode(text), let decoded = String(data: data, encoding: .utf8), !decoded.isEmpty
            else {
                throw .malformed("the source is neither plain/… nor base64url")
            }
            source = try ImageRequest.sourceURL(decoded, addsScheme: false)
        }
        if extensionName == "best" {
            (operations.format, operations.bestFormat) = (nil, true)
        } else if let extensionName, !extensionName.isEmpty {
            (operations.format, operations.bestFormat) = (try format(extensionName), false)
        }
        return ImageRequest(
            grammar: .imgproxy, signature: signature, signedPath: signedPath, operations: operations, source: source)
    }
}
