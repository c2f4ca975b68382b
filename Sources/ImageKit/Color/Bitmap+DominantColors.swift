import Foundation

/// The six colours a UI picks from an image to theme around it, as Android's Palette and
/// imgproxy's `dominant_colors` name them: vibrant and muted, each light, normal and dark.
public struct DominantColors: Sendable, Hashable {
    /// Saturated, mid lightness.
    public var vibrant: RGBAColor?
    /// Saturated, light.
    public var lightVibrant: RGBAColor?
    /// Saturated, dark.
    public var darkVibrant: RGBAColor?
    /// Desaturated, mid lightness.
    public var muted: RGBAColor?
    /// Desaturated, light.
    public var lightMuted: RGBAColor?
    /// Desaturated, dark.
    public var darkMuted: RGBAColor?

    /// The colours by imgproxy's JSON names (`vibrant`, `light_vibrant`, `dark_vibrant`, `muted`,
    /// `light_muted`, `dark_muted`), those found only.
    public var named: [String: RGBAColor] {
        let all: [(String, RGBAColor?)] = [
            ("vibrant", vibrant), ("light_vibrant", lightVibrant), ("dark_vibrant", darkVibrant), ("muted", muted),
            ("light_muted", lightMuted), ("dark_muted", darkMuted),
        ]
        return Dictionary(uniqueKeysWithValues: all.compactMap { name, color in color.map { (name, $0) } })
    }
}

extension Bitmap {
    /// The image's ``DominantColors``: its colours quantised to 16 swatches (median cut), each of
    /// the six targets taking the swatch, not taken by an earlier target, within its lightness and
    /// saturation ranges that scores best on closeness to its target lightness (weight 0.52) and
    /// saturation (0.24) and on population (0.24) — Android Palette's rule. With `buildingMissed`,
    /// a target no swatch fits is made from a found one of the same kind (vibrant or muted) at the
    /// target's lightness, as imgproxy's `build_missed` does.
    public func dominantColors(buildingMissed: Bool = false) -> DominantColors {
        let swatches = swatches(maxColors: 16).map { swatch in
            (color: swatch.color, population: swatch.population, hsl: Self.hsl(swatch.color))
        }
        let most = Double(swatches.map(\.population).max() ?? 1)
        var used = Set<Int>()
        var found: [DominantTarget: RGBAColor] = [:]
        for target in DominantTarget.allCases {
            var best: (index: Int, score: Double)?
            for (index, swatch) in swatches.enumerated() where !used.contains(index) {
                let (_, saturation, lightness) = swatch.hsl
                guard target.lightness.range.contains(lightness), target.saturation.range.contains(saturation) else {
                    continue
                }
                let score =
                    0.24 * (1 - abs(saturation - target.saturation.target)) + 0.52
                    * (1 - abs(lightness - target.lightness.target)) + 0.24 * Double(swatch.population) / most
                if score > (best?.score ?? -1) { best = (index, score) }
            }
            if let best {
                used.insert(best.index)
                found[target] = swatches[best.index].color
            }
        }
        if buildingMissed {
            for target in DominantTarget.allCases where found[target] == nil {
                let kin = DominantTarget.allCases.filter { $0.isVibrant == target.isVibrant }
                guard let source = kin.compactMap({ found[$0] }).first else { continue }
                let (hue, saturation, _) = Self.hsl(source)
                found[target] = Self.color(hue: hue, saturation: saturation, lightness: target.lightness.target)
            }
        }
        return DominantColors(
            vibrant: found[.vibrant], lightVibrant: found[.lightVibrant], darkVibrant: found[.darkVibrant],
            muted: found[.muted], lightMuted: found[.lightMuted], darkMuted: found[.darkMuted])
    }

    /// Hue (0…1), saturation and lightness (HSL) of a colour.
    static func hsl(_ color: RGBAColor) -> (Double, Double, Double) {
        let r = Double(color.red) / 255, g = Double(color.green) / 255, b = Double(color.blue) / 255
        let high = max(r, g, b), low = min(r, g, b), lightness = (high + low) / 2
        guard high > low else { return (0, 0, lightness) }
        let delta = high - low
        let saturation = delta / (1 - abs(2 * lightness - 1))
        var hue: Double
        switch high {
        case r: hue = (g - b) / delta + (g < b ? 6 : 0)
        case g: hue = (b - r) / delta + 2
        default: hue = (r - g) / delta + 4
        }
        hue /= 6
        return (hue, min(1, saturation), lightness)
    }

    /// The opaque colour of a hue (0…1), saturation and lightness.
    static func color(hue: Double, saturation: Double, lightness: Double) -> RGBAColor {
        let chroma = (1 - abs(2 * lightness - 1)) * saturation
        func channel(_ offset: Double) -> UInt8 {
            let k = (offset + hue * 12).truncatingRemainder(dividingBy: 12)
            let value = lightness - chroma / 2 * max(-1, min(k - 3, 9 - k, 1))
            return UInt8((min(max(value, 0), 1) * 255).rounded())
        }
        return RGBAColor(red: channel(0), green: channel(8), blue: channel(4))
    }
}

/// Android Palette's six targets: lightness and saturation as (lowest, ideal, highest).
enum DominantTarget: CaseIterable, Hashable {
    case lightVibrant, vibrant, darkVibrant, lightMuted, muted, darkMuted

    struct Band {
        var range: ClosedRange<Double>
        var target: Double
    }

    var isVibrant: Bool { self == .lightVibrant || self == .vibrant || self == .darkVibrant }

    var lightness: Band {
        switch self {
        case .lightVibrant, .lightMuted: Band(range: 0.55...1, target: 0.74)
        case .vibrant, .muted: Band(range: 0.3...0.7, target: 0.5)
        case .darkVibrant, .darkMuted: Band(range: 0...0.45, target: 0.26)
        }
    }

    var saturation: Band {
        isVibrant ? Band(range: 0.35...1, target: 1) : Band(range: 0...0.4, target: 0.3)
    }
}
