import Foundation
import HTTPTypes
import ImageKit

// Responses: negotiation, validators (ETag, Last-Modified, Vary, Cache-Control) and the
// answer's fields.
extension ImageService {
    /// Whether `Accept` may choose the format of this source's answer (when no format is
    /// asked). imgproxy's rule: for every source, animations too (an animated GIF becomes an
    /// animated WebP or AVIF). thumbor's: not for a GIF or an animation, which keep their format.
    static func negotiates(_ request: ImageRequest, _ signature: ImageSignature) -> Bool {
        request.operations.rules.negotiatesAnimations || (!signature.isAnimated && signature.format != .gif)
    }

    static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        return ifNoneMatch.split(separator: ",").contains {
            let tag = $0.trimmingCharacters(in: .whitespaces)
            return tag == etag || tag == "W/" + etag || tag == "*"
        }
    }

    /// The headers a 200 and a 304 of one result share.
    /// `varies`: `Accept` chose the format; `hinted`: client hints may have chosen the size (the
    /// hints are then in `Vary`, and `Accept-CH` asks browsers to send them).
    func validators(
        etag: String, lastModified: String?, varies: Bool, hinted: Bool, _ operations: ImageOperations, now: Int
    ) -> HTTPFields {
        var fields: HTTPFields = [.eTag: etag, .cacheControl: cacheControl(operations, now: now)]
        if let lastModified { fields[.lastModified] = lastModified }
        let vary = (varies ? ["Accept"] : []) + (hinted ? ClientHints.headerNames : [])
        if !vary.isEmpty { fields[.vary] = vary.joined(separator: ", ") }
        if hinted { fields[Self.acceptCHField] = ClientHints.acceptCH }
        return fields
    }

    static let acceptCHField = HTTPField.Name("Accept-CH")!

    /// Whether client hints shape this request's answer: on in the configuration, and a grammar
    /// that reads them.
    func readsClientHints(_ request: ImageRequest) -> Bool {
        configuration.clientHints && request.readsClientHints
    }

    /// A result's response: 304 when the client holds it already.
    func respond(with result: CachedResult, _ answering: Answering) -> ImageServiceResponse {
        let operations = answering.request.operations
        // A thumbor GIF stays a GIF whatever Accept says: no Vary for it.
        let varies = answering.negotiable && (operations.rules.negotiatesAnimations || result.image.format != .gif)
        let common = validators(
            etag: result.etag, lastModified: result.lastModified, varies: varies,
            hinted: readsClientHints(answering.request), operations, now: answering.now)
        if Self.matches(answering.ifNoneMatch, result.etag) {
            return ImageServiceResponse(status: .notModified, headerFields: common)
        }
        let processed = result.image
        var fields: HTTPFields = [
            .contentType: processed.format.mimeType, .contentLength: String(processed.data.count),
        ]
        if configuration.sendsSourceTags {
            fields[Self.surrogateKeyField] = answering.tag
            fields[Self.cacheTagField] = answering.tag
        }
        fields.append(contentsOf: common)
        if let choice = processed.autoQuality { fields[Self.qualityField] = choice.headerValue }
        if operations.filename != nil || operations.returnAttachment {
            let name =
                (operations.filename ?? "image") + "." + (processed.format == .jpeg ? "jpg" : processed.format.rawValue)
            let safe = String(name.unicodeScalars.filter { $0.isASCII && $0 != "\"" && $0 != "\\" && $0.value >= 0x20 })
            fields[.contentDisposition] =
                (operations.returnAttachment ? "attachment" : "inline") + "; filename=\"\(safe)\""
        }
        return ImageServiceResponse(status: .ok, headerFields: fields, body: processed.data)
    }

    static let surrogateKeyField = HTTPField.Name("Surrogate-Key")!

    /// The quality autoquality chose, and the metric's value at it (``AutoQualityChoice``).
    public static let qualityField = HTTPField.Name("X-ImageKit-Quality")!

    static let cacheTagField = HTTPField.Name("Cache-Tag")!

    func cacheControl(_ operations: ImageOperations, now: Int) -> String {
        var maxAge = operations.maxAge ?? configuration.maxAge
        if let expires = operations.expires { maxAge = min(maxAge, max(0, expires - now)) }
        return "public, max-age=\(maxAge)"
    }
}
