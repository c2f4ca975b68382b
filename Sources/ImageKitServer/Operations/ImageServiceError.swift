import Foundation
import ImageKit

/// Why the service refuses or fails a request: a stable code, which decides the HTTP status it
/// is answered with, and a message for people (never a local path, a key or the origin's body).
///
/// Every failure of the module is one of these: the grammars, the fetcher and the pipeline throw
/// them, pixel code throws ImageKit's `ImageError` (mapped by ``init(_:)-(ImageError)``), and
/// the status of each code is decided in one place, ``Code/status``.
///
/// ```swift
/// throw ImageServiceError(.unknownFilter, "unknown filter 'sepia'")
/// ```
public struct ImageServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable, machine-readable reason: the JSON body's `error`.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        // 400: the URL or a request body is malformed or asks for something impossible.
        /// The path is not a URL of either grammar.
        case malformedURL
        /// An imgproxy option's arguments are wrong.
        case invalidOption
        /// A thumbor filter's arguments are wrong.
        case invalidFilterArgument
        /// An argument found wrong once the image was read.
        case invalidArgument
        /// A source URL that cannot be fetched.
        case invalidSource
        /// A source scheme other than http, https, s3 and local.
        case unsupportedScheme
        /// An encrypted imgproxy source URL.
        case unsupportedSource
        /// A thumbor filter this service does not have.
        case unknownFilter
        /// An imgproxy option this service does not have.
        case unknownOption
        /// An imgproxy preset that is not configured.
        case unknownPreset
        /// A purge request without a source.
        case malformedPurge
        // 403
        /// The signature does not match.
        case invalidSignature
        /// An unsigned URL where only signed ones are served.
        case unsignedURL
        /// The source's host is not among the allowed ones.
        case sourceNotAllowed
        /// The source resolves to an address the policy refuses (private, link-local …).
        case addressNotAllowed
        /// An admin request without the admin key.
        case forbidden
        // 404
        /// The URL's `expires` is past.
        case expired
        /// The origin answered 404 or 410 (or failed permanently a moment ago).
        case sourceNotFound
        /// No such route.
        case notFound
        // 405
        /// A method other than GET and HEAD on an image path.
        case methodNotAllowed
        // 413
        /// The source is larger than the size limit.
        case sourceTooLarge
        // 415
        /// The source's bytes are no image this build reads.
        case notAnImage
        /// The source image is cut short.
        case truncatedImage
        /// The source image is corrupt.
        case undecodableImage
        /// The source document needs a password.
        case encryptedSource
        /// The asked output format is not written by this build.
        case unsupportedOutputFormat
        // 422
        /// The source has more pixels than the limit.
        case tooManyPixels
        // 500: the service's own configuration or a failure of its own.
        /// No signing key is set and unsigned URLs are not allowed.
        case noKeys
        /// An allowed network is not an address or CIDR.
        case invalidNetwork
        /// The cache directory cannot be opened.
        case cacheUnavailable
        /// An imgproxy key or salt is not hex.
        case invalidKey
        /// Processing failed for another reason.
        case processingFailed
        // 502
        /// The origin failed.
        case originFailed
        /// The origin sent no bytes.
        case emptySource
        // 503
        /// The worker pool's queue is full.
        case busy
        /// The node is shutting down.
        case draining
        // 504
        /// The source's deadline passed.
        case originTimeout

        /// The HTTP status the code is answered with.
        public var status: Int {
            switch self {
            case .malformedURL, .invalidOption, .invalidFilterArgument, .invalidArgument, .invalidSource,
                .unsupportedScheme, .unsupportedSource, .unknownFilter, .unknownOption, .unknownPreset,
                .malformedPurge:
                return 400
            case .invalidSignature, .unsignedURL, .sourceNotAllowed, .addressNotAllowed, .forbidden: return 403
            case .expired, .sourceNotFound, .notFound: return 404
            case .methodNotAllowed: return 405
            case .sourceTooLarge: return 413
            case .notAnImage, .truncatedImage, .undecodableImage, .encryptedSource, .unsupportedOutputFormat:
                return 415
            case .tooManyPixels: return 422
            case .noKeys, .invalidNetwork, .cacheUnavailable, .invalidKey, .processingFailed: return 500
            case .originFailed, .emptySource: return 502
            case .busy, .draining: return 503
            case .originTimeout: return 504
            }
        }
    }

    /// Why.
    public var code: Code
    /// For people; never a local path, a key or the origin's body.
    public var message: String

    /// The HTTP status the error is answered with (the code's).
    public var status: Int { code.status }

    /// An error answered with the code's status and `{"error": code, "message": message}`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `STATUS code: message`.
    public var description: String { "\(status) \(code.rawValue): \(message)" }

    /// ImageKit's decoding and encoding errors as the service answers them: 422 for a
    /// decompression bomb, 415 for bytes it cannot read, 400 for a bad argument, 500 otherwise.
    public init(_ error: ImageError) {
        switch error.code {
        case .decompressionBomb: self.init(.tooManyPixels, error.message)
        case .truncatedData: self.init(.truncatedImage, "the source image is cut short")
        case .badImageData, .zeroPixels: self.init(.undecodableImage, "the source image is corrupt")
        case .unsupportedFormat, .emptyData: self.init(.notAnImage, "the source is not an image this service reads")
        case .encrypted: self.init(.encryptedSource, "the source document needs a password")
        case .invalidArgument: self.init(.invalidArgument, error.message)
        default: self.init(.processingFailed, "the image could not be processed (\(error.code))")
        }
    }

    /// 400: a malformed path or option.
    static func malformed(_ message: String) -> ImageServiceError { ImageServiceError(.malformedURL, message) }
    /// 403: a wrong or missing signature.
    static func badSignature(_ message: String) -> ImageServiceError { ImageServiceError(.invalidSignature, message) }
}
