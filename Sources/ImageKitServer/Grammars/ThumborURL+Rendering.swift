import Foundation

extension ThumborURL {
    /// The path (after the signature, without a leading `/`) of `operations` and `source` in
    /// thumbor's grammar: parsing it gives the same operations back, for operations thumbor's
    /// grammar can say.
    public static func path(for operations: ImageOperations, source: URL) -> String {
        var parts: [String] = []
        let number = ImageOperations.number
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
        var filters: [String] = []
        switch operations.gravity {
        case .smart: break
        case .northWest: parts += ["left", "top"]
        case .north: parts += ["top"]
        case .northEast: parts += ["right", "top"]
        case .west: parts += ["left"]
        case .east: parts += ["right"]
        case .southWest: parts += ["left", "bottom"]
        case .south: parts += ["bottom"]
        case .southEast: parts += ["right", "bottom"]
        case .focalRegion(let left, let top, let right, let bottom):
            filters.append("focal(\(left)x\(top):\(right)x\(bottom))")
        case .center, .focalPoint: break
        }
        if operations.gravity == .smart { parts.append("smart") }
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
        let facts = operations.infoFacts
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
        if let autoQuality = operations.autoQuality {
            filters.append("autoquality(\(autoQuality.arguments.joined(separator: ",")))")
        }
        if let maxAge = operations.maxAge { filters.append("max_age(\(maxAge))") }
        if operations.still { filters.append("still(\(number(operations.videoTime ?? 0)))") }
        if operations.stripColorProfile { filters.append("strip_icc()") }
        for filter in operations.filters {
            switch filter {
            case .blur(let radius, let sigma):
                filters.append("blur(\(number(radius))" + (sigma.map { ",\(number($0))" } ?? "") + ")")
            case .sharpen(let strength, let sigma, let luminanceOnly):
                filters.append("sharpen(\(number(strength)),\(number(sigma)),\(luminanceOnly))")
            case .grayscale: filters.append("grayscale()")
            case .brightness(let value): filters.append("brightness(\(value))")
            case .contrast(let value): filters.append("contrast(\(value))")
            case .saturation(let value): filters.append("saturation(\(number(value)))")
            case .rgb(let red, let green, let blue): filters.append("rgb(\(red),\(green),\(blue))")
            case .noise(let value): filters.append("noise(\(value))")
            case .equalize: filters.append("equalize()")
            case .frame(let url): filters.append("frame(\(url))")
            case .curve(let all, let red, let green, let blue):
                func list(_ points: [Int]) -> String {
                    "["
                        + stride(from: 0, to: points.count, by: 2).map { "(\(points[$0]),\(points[$0 + 1]))" }
                        .joined(separator: ",") + "]"
                }
                filters.append("curve(\(list(all)),\(list(red)),\(list(green)),\(list(blue)))")
            case .roundCorner(let a, let b, let color, let transparent):
                filters.append(
                    "round_corner(\(a == b ? "\(a)" : "\(a)|\(b)"),\(color.red),\(color.green),\(color.blue),\(transparent))"
                )
            case .watermark(let url, let x, let y, let alpha, let widthRatio, let heightRatio):
                var arguments = [url, x.description, y.description, String(alpha)]
                if widthRatio != nil || heightRatio != nil {
                    arguments += [widthRatio.map(number) ?? "none", heightRatio.map(number) ?? "none"]
                }
                filters.append("watermark(\(arguments.joined(separator: ",")))")
            case .pixelate: break  // not in this grammar
            }
        }
        if !filters.isEmpty { parts.append("filters:" + filters.joined(separator: ":")) }
        // Plain, as thumbor takes it: the rest of the path is the source, query included.
        parts.append(source.absoluteString)
        return parts.joined(separator: "/")
    }
}
