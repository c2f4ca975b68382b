import Foundation

/// An HTTP answer of the service, framework-free: the HTTP layer writes it as it is.
public struct ImageServiceResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// Header fields in order (names as sent).
    public var headers: [(name: String, value: String)]
    /// The body (empty for HEAD and 304).
    public var body: Data
    /// The grammar the path was read in (nil when it was not read).
    public var grammar: ImageRequest.Grammar?
    /// Where the image came from (nil for errors before the source).
    public var cacheTier: ImageServiceCacheTier?

    /// A response from its parts.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// `{"error": code, "message": …}` with `Cache-Control: no-cache` (a 404: a short max-age).
    static func error(_ error: ImageServiceError) -> ImageServiceResponse {
        let object = ["error": error.code.rawValue, "message": error.message]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var headers: [(String, String)] = [
            ("Content-Type", "application/json"), ("Content-Length", String(body.count)),
        ]
        headers.append(("Cache-Control", error.status == 404 ? "public, max-age=60" : "no-cache"))
        if error.status == 503 { headers.append(("Retry-After", "1")) }
        return ImageServiceResponse(
            status: error.status, headers: headers.map { (name: $0.0, value: $0.1) }, body: body)
    }
}
