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
    var bytes: [UInt8] { storage.bytes }
    /// The profile's description tag (`desc`), e.g. "Display P3"; nil when it has none.
    public var profileDescription: String? { storage.description }
    /// The colour space of the pixels the profile describes.
    public var colorSpace: ColorSpace { storage.colorSpace }
    /// Whether converting to sRGB leaves every 8-bit value unchanged: an sRGB profile, under
    /// whatever name (matrix/TRC profiles whose primaries and curves are sRGB's, compared after
    /// parsing; see the README's colour notes).
    public var isSRGB: Bool { storage.isSRGB }

    /// Behind one immutable reference: a decoded image carries two optional profiles and is
    /// copied on every cache hit, where each copy then retains one pointer per profile.
    private let storage: Storage

    private final class Storage: Sendable {
        let bytes: [UInt8]
        let description: String?
        let colorSpace: ColorSpace
        let isSRGB: Bool

        init(bytes: [UInt8], description: String?, colorSpace: ColorSpace, isSRGB: Bool) {
            self.bytes = bytes
            self.description = description
            self.colorSpace = colorSpace
            self.isSRGB = isSRGB
        }
    }

    /// Parses `iccData` with Little CMS.
    /// - Throws: ``ImageError/Code/badImageData`` when it is not a usable ICC profile.
    public init(iccData: Data) throws(ImageError) {
        guard let conversion = ColorConversion.cached(for: [UInt8](iccData)) else {
            throw ImageError(.badImageData, "the ICC profile (\(iccData.count) bytes) cannot be parsed")
        }
        self = conversion.profile
    }

    init(bytes: [UInt8], description: String?, colorSpace: ColorSpace, isSRGB: Bool) {
        storage = Storage(bytes: bytes, description: description, colorSpace: colorSpace, isSRGB: isSRGB)
    }

    /// The description, or "ICC profile (N bytes)" for a profile without one.
    public var description: String { profileDescription ?? "ICC profile (\(bytes.count) bytes)" }

    /// Profiles are equal when their bytes are (the same storage is compared first).
    public static func == (lhs: ColorProfile, rhs: ColorProfile) -> Bool {
        lhs.storage === rhs.storage || lhs.bytes == rhs.bytes
    }
    /// Hashes the profile's bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
