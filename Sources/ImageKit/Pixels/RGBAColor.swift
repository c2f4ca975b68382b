/// A colour with straight alpha, 8 bits per channel.
public struct RGBAColor: Hashable, Sendable, CustomStringConvertible {
    /// Red, 0 … 255.
    public var red: UInt8
    /// Green, 0 … 255.
    public var green: UInt8
    /// Blue, 0 … 255.
    public var blue: UInt8
    /// Alpha, 0 (transparent) … 255 (opaque).
    public var alpha: UInt8

    /// A colour from 8-bit components, opaque unless `alpha` says otherwise.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    /// Parses `#RRGGBB` or `#RRGGBBAA` (the `#` is optional, hex digits in either case).
    public init?(hex: String) {
        var digits = Substring(hex)
        if digits.hasPrefix("#") { digits = digits.dropFirst() }
        guard digits.count == 6 || digits.count == 8, let value = UInt32(digits, radix: 16) else { return nil }
        let rgba = digits.count == 6 ? value << 8 | 0xFF : value
        self.init(
            red: UInt8(rgba >> 24), green: UInt8(rgba >> 16 & 0xFF), blue: UInt8(rgba >> 8 & 0xFF),
            alpha: UInt8(rgba & 0xFF))
    }

    /// Opaque black.
    public static let black = RGBAColor(red: 0, green: 0, blue: 0)
    /// Opaque white.
    public static let white = RGBAColor(red: 255, green: 255, blue: 255)
    /// Fully transparent.
    public static let clear = RGBAColor(red: 0, green: 0, blue: 0, alpha: 0)

    /// `#rrggbbaa`, lowercase: SDWebImage's `sd_hexString`, used in transformer keys.
    public var hexString: String {
        let value = UInt32(red) << 24 | UInt32(green) << 16 | UInt32(blue) << 8 | UInt32(alpha)
        let digits = String(value, radix: 16)
        return "#" + String(repeating: "0", count: 8 - digits.count) + digits
    }

    public var description: String { hexString }
}
