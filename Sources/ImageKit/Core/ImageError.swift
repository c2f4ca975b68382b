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
        /// Out of memory or another failure that is not the input's fault.
        public static let internalError = Code(rawValue: "internalError")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
