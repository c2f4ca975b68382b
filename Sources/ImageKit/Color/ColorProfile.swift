import Foundation

/// An ICC colour profile embedded in an image file: the bytes, and what Little CMS reads in them.
///
/// Decoders convert the pixels of a profile-tagged image to sRGB by default and report the
/// profile they found in ``DecodedImage/sourceColorProfile``. With
/// ``ImageDecodingOptions/keepsColorProfile`` the pixels stay as stored and the profile travels
/// on ``DecodedImage/colorProfile``, which encoders embed again.
///
/// ```swift
/// let image = try ImageCodersManager.shared.decode(data)
/// print(image.sourceColorProfile?.description ?? "untagged")   // "Display P3"
/// ```
public struct ColorProfile: Sendable, Hashable, CustomStringConvertible {
    /// The colour space of the data the profile describes.
    public enum ColorSpace: String, Sendable, Hashable {
        /// Red, green and blue.
        case rgb
        /// One grey channel.
        case gray
        /// Cyan, magenta, yellow and black (print).
        case cmyk
        /// Any other space (Lab, XYZ, n-colour).
        case other
    }

    /// The profile as stored in the file.
    public var iccData: Data { Data(bytes) }
    /// The same bytes as an array: what the process-wide conversion cache keys on. (A `Data`
    /// kept in a global collection hides its storage pointer in enum spare bits, which
    /// LeakSanitizer then reports as leaked.)
    let bytes: [UInt8]
    /// The profile's description tag (`desc`), e.g. "Display P3"; nil when it has none.
    public let profileDescription: String?
    /// The colour space of the pixels the profile describes.
    public let colorSpace: ColorSpace
    /// Whether converting to sRGB leaves every 8-bit value unchanged: an sRGB profile, under
    /// whatever name (matrix/TRC profiles whose primaries and curves are sRGB's, compared after
    /// parsing; see the README's colour notes).
    public let isSRGB: Bool

    /// Parses `iccData` with Little CMS.
    /// - Throws: ``ImageError/Code/badImageData`` when it is not a usable ICC profile.
    public init(iccData: Data) throws(ImageError) {
        guard let conversion = ColorConversion.cached(for: [UInt8](iccData)) else {
            throw ImageError(.badImageData, "the ICC profile (\(iccData.count) bytes) cannot be parsed")
        }
        self = conversion.profile
    }

    init(bytes: [UInt8], description: String?, colorSpace: ColorSpace, isSRGB: Bool) {
        self.bytes = bytes
        self.profileDescription = description
        self.colorSpace = colorSpace
        self.isSRGB = isSRGB
    }

    /// The description, or "ICC profile (N bytes)" for a profile without one.
    public var description: String { profileDescription ?? "ICC profile (\(bytes.count) bytes)" }

    public static func == (lhs: ColorProfile, rhs: ColorProfile) -> Bool { lhs.bytes == rhs.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
