import Foundation

extension ImageOperations {
    /// A string that names these operations and nothing else: fields in a fixed order, defaults
    /// left out, numbers in one spelling. Requests with the same operations, however their URLs
    /// spelled them, share it; the result cache and the ETag are derived from it.
    public var canonicalKey: String {
        var parts: [String] = []
        func add(_ name: String, _ value: String) { parts.append(name + ":" + value) }
        if rules == .imgproxy {
            add("rules", "imgproxy")
        } else if rules != .thumbor {
            add(
                "rules",
                "\(rules.geometry.rawValue),ev\(rules.enlargesVectors ? 1 : 0),gif\(rules.skipsFiltersOnGIF ? 1 : 0),"
                    + "anim\(rules.negotiatesAnimations ? 1 : 0)")
        }
        if metadataOnly { add("meta", "1") }
        if !infoFacts.isEmpty { add("facts", Self.describe(infoFacts)) }
        if let trim { add("trim", "\(trim.reference.rawValue),\(Self.number(trim.tolerance))") }
        if let crop { add("crop", Self.describe(crop)) }
        if width != 0 || height != 0 || widthIsOriginal || heightIsOriginal || resizeMode != .fit {
            add("rs", resizeMode.rawValue)
        }
        if widthIsOriginal { add("w", "orig") } else if width != 0 { add("w", String(width)) }
        if heightIsOriginal { add("h", "orig") } else if height != 0 { add("h", String(height)) }
        if adaptive { add("adaptive", "1") }
        if enlarge { add("el", "1") }
        if extend { add("ex", "1") }
        if minWidth != 0 { add("mw", String(minWidth)) }
        if minHeight != 0 { add("mh", String(minHeight)) }
        if zoomX != 1 || zoomY != 1 { add("z", Self.number(zoomX) + "," + Self.number(zoomY)) }
        if dpr != 1 { add("dpr", Self.number(dpr)) }
        if gravity != .center { add("g", Self.describe(gravity)) }
        if let padding { add("pd", padding.map(String.init).joined(separator: ",")) }
        if !autoRotate { add("ar", "0") }
        if rotate % 360 != 0 { add("rot", String((rotate % 360 + 360) % 360)) }
        if flipHorizontal { add("flh", "1") }
        if flipVertical { add("flv", "1") }
        if let background { add("bg", background.urlHex) }
        if let fill { add("fill", Self.describe(fill)) }
        if let proportion { add("prop", Self.number(proportion)) }
        for filter in filters { add("f", Self.describe(filter)) }
        if let videoTime { add("vts", Self.number(videoTime)) }
        if videoKeyframes { add("vtk", "1") }
        if still { add("still", "1") }
        if let videoStills { add("vst", Self.describe(videoStills)) }
        if let format { add("fmt", format.rawValue) } else if bestFormat { add("fmt", "best") }
        if let animationAsVideo { add("gifv", animationAsVideo.rawValue) }
        if let quality { add("q", String(quality)) }
        for (format, quality) in formatQuality.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            add("fq", "\(format.rawValue),\(quality)")
        }
        if let maxBytes { add("mb", String(maxBytes)) }
        if let autoQuality { add("aq", autoQuality.arguments.joined(separator: ":")) }
        if !stripMetadata { add("sm", "0") }
        if stripColorProfile { add("scp", "1") }
        if keepCopyright { add("kcr", "1") }
        if let maxAge { add("maxage", String(maxAge)) }
        if let expires { add("exp", String(expires)) }
        if let filename { add("fn", filename) }
        if returnAttachment { add("att", "1") }
        if let cacheBuster { add("cb", cacheBuster) }
        return parts.joined(separator: ";")
    }

    /// A number in its shortest exact spelling (`2`, `0.5`).
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        return String(value)
    }

    static func describe(_ facts: InfoFacts) -> String {
        var parts: [String] = []
        if facts.blurHashX > 0 { parts.append("bh\(facts.blurHashX)x\(facts.blurHashY)") }
        if facts.thumbHash { parts.append("th") }
        if facts.average { parts.append(facts.averageIgnoresTransparent ? "avg" : "avg-all") }
        if facts.paletteColors > 0 { parts.append("p\(facts.paletteColors)") }
        if facts.perceptualHash { parts.append("ph") }
        if facts.dominantColors { parts.append(facts.buildsMissedColors ? "dc-built" : "dc") }
        if !facts.hashsums.isEmpty { parts.append("chs-" + facts.hashsums.map(\.rawValue).joined(separator: "-")) }
        return parts.joined(separator: ",")
    }

    static func describe(_ stills: VideoStills) -> String {
        let layout: String
        switch stills.layout {
        case .sprite(let columns, let rows): layout = "tile,\(columns),\(rows)"
        case .animation(let frames, let delay): layout = "anim,\(frames),\(delay)"
        }
        return [
            layout, number(stills.step), String(stills.width), String(stills.height), stills.extend ? "1" : "0",
            stills.trim ? "1" : "0", stills.fill ? "1," + number(stills.focusX) + "," + number(stills.focusY) : "0",
        ].joined(separator: ",")
    }

    static func describe(_ crop: Crop) -> String {
        switch crop {
        case .region(let left, let top, let right, let bottom): return "\(left),\(top),\(right),\(bottom)"
        case .size(let width, let height, let gravity):
            return number(width) + "," + number(height) + (gravity.map { "," + describe($0) } ?? "")
        }
    }

    static func describe(_ gravity: Gravity) -> String {
        switch gravity {
        case .center: return "ce"
        case .north: return "no"
        case .south: return "so"
        case .east: return "ea"
        case .west: return "we"
        case .northEast: return "noea"
        case .northWest: return "nowe"
        case .southEast: return "soea"
        case .southWest: return "sowe"
        case .smart: return "sm"
        case .focalPoint(let x, let y): return "fp," + number(x) + "," + number(y)
        case .focalRegion(let left, let top, let right, let bottom): return "fr,\(left),\(top),\(right),\(bottom)"
        }
    }

    static func describe(_ fill: Fill) -> String {
        switch fill {
        case .color(let color): return color.urlHex
        case .blur: return "blur"
        case .auto: return "auto"
        }
    }

    static func describe(_ filter: Filter) -> String {
        switch filter {
        case .blur(let radius, let sigma):
            return "blur(" + number(radius) + (sigma.map { "," + number($0) } ?? "") + ")"
        case .sharpen(let strength, let sigma, let luminanceOnly):
            return "sharpen(\(number(strength)),\(number(sigma)),\(luminanceOnly ? 1 : 0))"
        case .pixelate(let size): return "pixelate(\(size))"
        case .grayscale: return "grayscale()"
        case .brightness(let value): return "brightness(\(value))"
        case .contrast(let value): return "contrast(\(value))"
        case .saturation(let value): return "saturation(\(number(value)))"
        case .rgb(let red, let green, let blue): return "rgb(\(red),\(green),\(blue))"
        case .noise(let value): return "noise(\(value))"
        case .equalize: return "equalize()"
        case .frame(let url): return "frame(\(url))"
        case .curve(let all, let red, let green, let blue):
            return "curve("
                + [all, red, green, blue].map { $0.map(String.init).joined(separator: ",") }
                .joined(separator: ";") + ")"
        case .roundCorner(let a, let b, let color, let transparent):
            return "round_corner(\(a),\(b),\(color.urlHex),\(transparent ? 1 : 0))"
        case .watermark(let url, let x, let y, let alpha, let widthRatio, let heightRatio):
            return
                "watermark(\(url),\(x),\(y),\(alpha),\(widthRatio.map(number) ?? "-"),\(heightRatio.map(number) ?? "-"))"
        }
    }
}
