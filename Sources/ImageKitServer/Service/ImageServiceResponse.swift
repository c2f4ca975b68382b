import Foundation
import HTTPTypes

/// An HTTP answer of the service in swift-http-types' values: the HTTP layer writes it as it is.
public struct ImageServiceResponse: Sendable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// The header fields, in order.
    public var headerFields: HTTPFields
    /// The body (empty for HEAD and 304).
    public var body: Data
    /// The grammar the path was read in (nil when it was not read).
    public var grammar: ImageRequest.Grammar?
    /// Where the image came from (nil for errors before the source).
    public var cacheTier: ImageServiceCacheTier?

    /// A response from its parts.
    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: Data = Data()) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
    }

    /// The head of the response.
    public var head: HTTPResponse { HTTPResponse(status: status, headerFields: headerFields) }

    /// A header's value (several fields of one name joined by commas); nil when absent or when
    /// `name` is not a valid field name.
    public func header(_ name: String) -> String? {
        HTTPField.Name(name).flatMap { headerFields[$0] }
    }

    /// A JSON body with its `Content-Type` and `Content-Length`, and `Cache-Control`.
    static func json(_ status: HTTPResponse.Status, _ body: Data, cacheControl: String) -> ImageServiceResponse {
        ImageServiceResponse(
            status: status,
            headerFields: [
                .contentType: "application/json", .contentLength: String(body.count), .cacheControl: cacheControl,
            ], body: body)
    }

    /// `{"error": code, "message": …}` with `Cache-Control: no-cache` (a 404: a short max-age;
    /// a 503: `Retry-After: 1`).
    static func error(_ error: ImageServiceError) -> ImageServiceResponse {
        let object = ["error": error.code.rawValue, "message": error.message]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var response = json(
            HTTPResponse.Status(code: error.status), body,
            cacheControl: error.status == 404 ? "public, max-age=60" : "no-cache")
        if error.status == 503 { response.headerFields[.retryAfter] = "1" }
        return response
    }
}
