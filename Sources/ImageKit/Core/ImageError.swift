import Foundation

/// The one error type ImageKit throws: a stable ``Code`` plus a human-readable message.
///
/// Switch on ``code`` (it is stable across releases and is what `imagekit info --json` prints);
/// the message is for people and may change.
///
/// ```swift
/// do { _ = try ImageCodersManager.shared.decode(data) }
/// catch let error as ImageError where error.code == .decompressionBomb { … }
/// ```
public struct ImageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error kind.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The data is empty.
        public static let emptyData = Code(rawValue: "emptyData")
        /// The data is corrupt or not an image the decoder can read (SDWebImage's BadImageData).
        public static let badImageData = Code(rawValue: "badImageData")
        /// The data ends before the image does.
        public static let truncatedData = Code(rawValue: "truncatedData")
        /// The format is recognised (or valid) but ImageKit cannot decode this variant of it:
        /// TIFF, HEIC, 12-bit or lossless JPEG …
        public static let unsupportedFormat = Code(rawValue: "unsupportedFormat")
        /// The document is encrypted with a password needed to open it (a PDF's user password).
        /// A file with only an owner password (which restricts printing or copying) opens.
        public static let encrypted = Code(rawValue: "encrypted")
        /// The header declares more pixels than the decoding limits allow.
        public static let decompressionBomb = Code(rawValue: "decompressionBomb")
        /// An image has zero width, zero height or no frames.
        public static let zeroPixels = Code(rawValue: "zeroPixels")
        /// An encoder failed or cannot encode the requested format.
        public static let encodingFailed = Code(rawValue: "encodingFailed")
        /// The operation was cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
        /// A file system operation failed (disk full, permission denied, read-only cache …).
        public static let ioError = Code(rawValue: "ioError")
        /// The URL is missing, malformed, or has a scheme no loader handles (SDWebImage 1000).
        public static let invalidURL = Code(rawValue: "invalidURL")
        /// The URL failed permanently before and is on the manager's failed-URL list; load it
        /// with `.retryFailed` to try again (SDWebImage 1003).
        public static let blacklisted = Code(rawValue: "blacklisted")
        /// The server answered with a status code outside the acceptable range (2001);
        /// ``ImageError/httpStatusCode`` holds it.
        public static let invalidStatusCode = Code(rawValue: "invalidStatusCode")
        /// The response is unusable: an empty body, or refused by a response modifier (2003).
        public static let invalidResponse = Code(rawValue: "invalidResponse")
        /// The Content-Type is not among the acceptable ones (2004).
        public static let invalidContentType = Code(rawValue: "invalidContentType")
        /// The body is larger than the configured maximum.
        public static let responseTooLarge = Code(rawValue: "responseTooLarge")
        /// Connecting took too long, or the transfer stalled.
        public static let timedOut = Code(rawValue: "timedOut")
        /// The host name did not resolve.
        public static let cannotFindHost = Code(rawValue: "cannotFindHost")
        /// The connection was refused or could not be made.
        public static let cannotConnect = Code(rawValue: "cannotConnect")
        /// The connection broke during the transfer (reset, closed early, nothing received).
        public static let connectionLost = Code(rawValue: "connectionLost")
        /// TLS failed: bad certificate, handshake error.
        public static let secureConnectionFailed = Code(rawValue: "secureConnectionFailed")
        /// Another transfer failure (curl's message says which).
        public static let networkError = Code(rawValue: "networkError")
        /// Out of memory or another failure that is not the input's fault.
        public static let internalError = Code(rawValue: "internalError")
        /// A parameter makes no sense for the image: a crop outside it, a negative radius …
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// The address policy refused the address a host resolved to, or a redirect led to
        /// (loopback, private, link-local …): ``AddressPolicy``.
        public static let forbiddenAddress = Code(rawValue: "forbiddenAddress")
        /// A cache-only load found nothing cached (the CLI's answer; the library's
        /// ``ImageLoadOptions/fromCacheOnly`` returns no image and no error, as SDWebImage does).
        public static let notCached = Code(rawValue: "notCached")
    }

    /// What kind of failure this is; switch on it.
    public var code: Code
    /// A message for logs and people, naming what failed and why.
    public var message: String
    /// The HTTP status, for ``Code/invalidStatusCode``.
    public var httpStatusCode: Int?

    /// An error of `code` with a message; `httpStatusCode` for `invalidStatusCode`.
    public init(_ code: Code, _ message: String, httpStatusCode: Int? = nil) {
        self.code = code
        self.message = message
        self.httpStatusCode = httpStatusCode
    }

    /// Whether trying again later may succeed: timeouts, DNS and connection
    /// failures, 5xx, 408 and 429, cancellation. Everything else (other 4xx, bad data) is
    /// permanent and may be remembered as a failed URL.
    public var isTransient: Bool {
        switch code {
        case .timedOut, .cannotFindHost, .cannotConnect, .connectionLost, .cancelled, .ioError, .internalError:
            return true
        case .invalidStatusCode:
            guard let status = httpStatusCode else { return false }
            return status >= 500 || status == 408 || status == 429
        default:
            return false
        }
    }

    public var description: String { "\(code): \(message)" }
}
