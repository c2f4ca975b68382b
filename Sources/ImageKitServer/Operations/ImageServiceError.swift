import Foundation

/// Why the service refuses or fails a request: a stable code, the HTTP status it is answered
/// with, and a message for people (never a local path, a key or the origin's body).
///
/// ```swift
/// throw ImageServiceError(.badRequest, code: "unknownFilter", "unknown filter 'sepia'")
/// ```
public struct ImageServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status the error is answered with.
    public var status: Int
    /// A stable, machine-readable code: the JSON body's `error`.
    public var code: String
    /// For people; never a local path, a key or the origin's body.
    public var message: String

    /// An error answered with `status` and `{"error": code, "message": message}`.
    public init(_ status: Int, code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// `STATUS code: message`.
    public var description: String { "\(status) \(code): \(message)" }

    /// 400: a malformed path or option.
    static func malformed(_ message: String) -> ImageServiceError {
        ImageServiceError(400, code: "malformedURL", message)
    }
    /// 400: an option or filter the grammar does not have.
    static func unknown(_ kind: String, _ name: String) -> ImageServiceError {
        ImageServiceError(
            400, code: "unknown" + kind.prefix(1).uppercased() + kind.dropFirst(), "unknown \(kind) '\(name)'")
    }
    /// 403: a wrong or missing signature.
    static func badSignature(_ message: String) -> ImageServiceError {
        ImageServiceError(403, code: "invalidSignature", message)
    }
}
