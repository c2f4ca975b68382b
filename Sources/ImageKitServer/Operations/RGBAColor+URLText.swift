import Foundation
import ImageKit

extension RGBAColor {
    /// A colour as thumbor's and imgproxy's URLs spell it: `rrggbb`, `rrggbbaa` or `rgb` (a `#`
    /// in front allowed, any case), a CSS name (`white`, `black`, `red`, `green`, `blue`, `gray`,
    /// `grey`, `yellow`, `orange`) or `transparent`; nil for anything else.
    ///
    /// ```swift
    /// RGBAColor(urlText: "fc0")      // 255, 204, 0
    /// RGBAColor(urlText: "white")    // 255, 255, 255
    /// ```
    public init?(urlText text: String) {
        let lower = text.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "#"))
        if let named = Self.urlNames[lower] {
            self = named
            return
        }
        // `rgb` is `rrggbb`; six or eight digits are ImageKit's own hex form.
        self.init(hex: lower.count == 3 ? lower.map { "\($0)\($0)" }.joined() : lower)
    }

    /// `rrggbb`, or `rrggbbaa` when not opaque: how the URLs and the result keys write a colour.
    public var urlHex: String {
        let bytes = alpha == 255 ? [red, green, blue] : [red, green, blue, alpha]
        return bytes.hexString
    }

    private static let urlNames: [String: RGBAColor] = [
        "transparent": RGBAColor(red: 0, green: 0, blue: 0, alpha: 0),
        "white": RGBAColor(red: 255, green: 255, blue: 255), "black": RGBAColor(red: 0, green: 0, blue: 0),
        "red": RGBAColor(red: 255, green: 0, blue: 0), "green": RGBAColor(red: 0, green: 128, blue: 0),
        "blue": RGBAColor(red: 0, green: 0, blue: 255), "gray": RGBAColor(red: 128, green: 128, blue: 128),
        "grey": RGBAColor(red: 128, green: 128, blue: 128), "yellow": RGBAColor(red: 255, green: 255, blue: 0),
        "orange": RGBAColor(red: 255, green: 165, blue: 0),
    ]
}
