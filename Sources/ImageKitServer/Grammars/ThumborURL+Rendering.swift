import Foundation

extension ThumborURL {
    /// The path (after the signature, without a leading `/`) of `operations` and `source` in
    /// thumbor's grammar: parsing it gives the same operations back, for operations thumbor's
    /// grammar can say.
    public static func path(for operations: ImageOperations, source: URL) -> String {
        var parts: [String] = []
        if operations.metadataOnly { parts.append("meta") }
        if let trim = operations.trim {
            // thumbor reads `trim:N` as a corner named N (bottom-right, tolerance 0): a tolerance
            // is only ever the third part, so the corner is spelled whenever one follows.
            var text = "trim"
            if trim.reference != .topLeft || trim.tolerance != 0 { text += ":" + trim.reference.rawValue }
            if trim.tolerance != 0 { text += ":\(Int(trim.tolerance))" }
            parts.append(text)
        }
        if case .region(let left, let top, let right, let bottom)? = operations.crop {
            parts.append("\(left)x\(top):\(right)x\(bottom)")
        }
        let fitIn = operations.resizeMode == .fit || operations.resizeMode == .cover
        if fitIn {
            parts.append(
                (operations.adaptive ? "adaptive-" : "") + (operations.resizeMode == .cover ? "full-" : "") + "fit-in")
        }
        func side(_ value: Int, original: Bool, flip: Bool) -> String {
            (flip ? "-" : "") + (original ? "orig" : String(value))
        }
        if operations.width != 0 || operations.height != 0 || operations.widthIsOriginal || operations.heightIsOriginal
            || operations.flipHorizontal || operations.flipVertical
        {
            parts.append(
                side(operations.width, original: operations.widthIsOriginal, flip: operations.flipHorizontal) + "x"
                    + side(operations.height, original: operations.heightIsOriginal, flip: operations.flipVertical))
        }
        let (gravityParts, focal) = gravity(operations.gravity)
        parts += gravityParts
        let filters =
            focal + optionFilters(operations) + operations.filters.compactMap(filterText)
        if !filters.isEmpty { parts.append("filters:" + filters.joined(separator: ":")) }
        // Plain, as thumbor takes it: the rest of the path is the source, query included.
        parts.append(source.absoluteString)
        return parts.joined(separator: "/")
    }

    /// The gravity's path segments (`left/top`, `smart`), or the `focal()` filter of a region.
    static func gravity(_ gravity: ImageOperations.Gravity) -> (parts: [String], filters: [String]) {
        switch gravity {
        case .northWest: (["left", "top"], [])
        case .north: (["top"], [])
        case .northEast: (["right", "top"], [])
        case .west: (["left"], [])
        case .east: (["right"], [])
        case .southWest: (["left", "bottom"], [])
        case .south: (["bottom"], [])
        case .southEast: (["right", "bottom"], [])
        case .smart: (["smart"], [])
        case .focalRegion(let left, let top, let right, let bottom): ([], ["focal(\(left)x\(top):\(right)x\(bottom))"])
        case .center, .focalPoint: ([], [])
        }
    }

    /// The filters that set options rather than change pixels (with `/meta/`'s facts), in one order.
    static func optionFilters(_ operations: ImageOperations) -> [String] {
        let number = ImageOperations.number
        var filters: [String] = []
        let fitIn = operations.resizeMode == .fit || operations.resizeMode == .cover
        // The mode's own upscaling is the default; say only what differs.
        let defaultEnlarge = !fitIn || operations.resizeMode == .cover
        if operations.resizeMode == .force { filters.append("stretch()") }
        if operations.enlarge != defaultEnlarge { filters.append(operations.enlarge ? "upscale()" : "no_upscale()") }
        if let quality = operations.quality { filters.append("quality(\(quality))") }
        if let format = operations.format {
            filters.append("format(\(format.rawValue))")
        } else if operations.bestFormat {
            filters.append("format(best)")
        }
        if let video = operations.animationAsVideo { filters.append("gifv(\(video.rawValue))") }
        if operations.rotate != 0 { filters.append("rotate(\((360 - operations.rotate) % 360))") }  // counter-clockwise
        if let fill = operations.fill { filters.append("fill(\(ImageOperations.describe(fill)))") }
        if let background = operations.background { filters.append("background_color(\(background.urlHex))") }
        if let proportion = operations.proportion { filters.append("proportion(\(number(proportion)))") }
        if let maxBytes = operations.maxBytes { filters.append("max_bytes(\(maxBytes))") }
        filters += factFilters(operations.infoFacts)
        if let autoQuality = operations.autoQuality {
            filters.append("autoquality(\(autoQuality.arguments.joined(separator: ",")))")
        }
        if let maxAge = operations.maxAge { filters.append("max_age(\(maxAge))") }
        if operations.still { filters.append("still(\(number(operations.videoTime ?? 0)))") }
        if operations.stripColorProfile { filters.append("strip_icc()") }
        return filters
    }

    /// `/meta/`'s placeholder and colour filters (ImageKit's, with imgproxy's `/info` names).
    static func factFilters(_ facts: ImageOperations.InfoFacts) -> [String] {
        var filters: [String] = []
        if facts.blurHashX > 0 { filters.append("blurhash(\(facts.blurHashX),\(facts.blurHashY))") }
        if facts.thumbHash { filters.append("thumb_hash()") }
        if facts.average { filters.append(facts.averageIgnoresTransparent ? "average()" : "average(0)") }
        if facts.paletteColors > 0 { filters.append("palette(\(facts.paletteColors))") }
        if facts.perceptualHash { filters.append("perceptual_hash()") }
        if facts.dominantColors {
            filters.append(facts.buildsMissedColors ? "dominant_colors(1)" : "dominant_colors()")
        }
        if !facts.hashsums.isEmpty {
            filters.append("calc_hashsums(\(facts.hashsums.map(\.rawValue).joined(separator: ",")))")
        }
        return filters
    }

    /// A pixel filter as thumbor spells it; nil for one its grammar cannot say.
    static func filterText(_ filter: ImageOperations.Filter) -> String? {
        let number = ImageOperations.number
        switch filter {
        case .blur(let radius, let sigma):
            return "blur(\(number(radius))" + (sigma.map { ",\(number($0))" } ?? "") + ")"
        case .sharpen(let strength, let sigma, let luminanceOnly):
            return "sharpen(\(number(strength)),\(number(sigma)),\(luminanceOnly))"
        case .grayscale: return "grayscale()"
        case .brightness(let value): return "brightness(\(value))"
        case .contrast(let value): return "contrast(\(value))"
        case .saturation(let value): return "saturation(\(number(value)))"
        case .rgb(let red, let green, let blue): return "rgb(\(red),\(green),\(blue))"
        case .noise(let value): return "noise(\(value))"
        case .equalize: return "equalize()"
        case .frame(let url): return "frame(\(url))"
        case .curve(let all, let red, let green, let blue):
            func list(_ points: [Int]) -> String {
                "["
                    + stride(from: 0, to: points.count, by: 2).map { "(\(points[$0]),\(points[$0 + 1]))" }
                    .joined(separator: ",") + "]"
            }
            return "curve(\(list(all)),\(list(red)),\(list(green)),\(list(blue)))"
        case .roundCorner(let a, let b, let color, let transparent):
            let radii = a == b ? "\(a)" : "\(a)|\(b)"
            return "round_corner(\(radii),\(color.red),\(color.green),\(color.blue),\(transparent))"
        case .watermark(let url, let x, let y, let alpha, let widthRatio, let heightRatio):
            var arguments = [url, x.description, y.description, String(alpha)]
            if widthRatio != nil || heightRatio != nil {
                arguments += [widthRatio.map(number) ?? "none", heightRatio.map(number) ?? "none"]
            }
            return "watermark(\(arguments.joined(separator: ",")))"
        case .pixelate: return nil  // not in this grammar
        }
    }
}
