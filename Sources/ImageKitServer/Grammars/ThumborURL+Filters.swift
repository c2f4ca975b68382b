import Foundation

// thumbor's filters: `filters:name(arguments):…`, each read into the operations with its
// arguments checked (a bad one is a 400 before anything is fetched).
extension ThumborURL {
    /// `NAME(ARGS):NAME(ARGS)…`, split at the colons outside parentheses.
    static func splitFilters(_ list: Substring) throws(ImageServiceError) -> [(name: String, arguments: [String])] {
        var filters: [(String, [String])] = []
        var index = list.startIndex
        while index < list.endIndex {
            guard let open = list[index...].firstIndex(of: "(") else { throw .malformed("a filter has no '('") }
            let name = String(list[index..<open])
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0 == "_" }) else {
                throw .malformed("'\(name.prefix(40))' is not a filter name")
            }
            var depth = 0
            var close: Substring.Index?
            var cursor = open
            while cursor < list.endIndex {
                if list[cursor] == "(" { depth += 1 }
                if list[cursor] == ")" {
                    depth -= 1
                    if depth == 0 { close = cursor; break }
                }
                cursor = list.index(after: cursor)
            }
            guard let close else { throw .malformed("filter '\(name)' is not closed") }
            let inside = list[list.index(after: open)..<close]
            filters.append(
                (
                    name,
                    inside.isEmpty
                        ? []
                        : inside.split(separator: ",", omittingEmptySubsequences: false).map {
                            $0.trimmingCharacters(in: .whitespaces)
                        }
                ))
            index = list.index(after: close)
            if index < list.endIndex {
                guard list[index] == ":" else { throw .malformed("filters are separated by ':'") }
                index = list.index(after: index)
            }
        }
        return filters
    }

    static func applyFilters(_ list: Substring, to operations: inout ImageOperations) throws(ImageServiceError) {
        for (name, arguments) in try splitFilters(list) {
            try apply(name, arguments, to: &operations)
        }
    }

    private static func int(_ text: String?, _ filter: String, in range: ClosedRange<Int>) throws(ImageServiceError)
        -> Int
    {
        guard let text, let value = Int(text), range.contains(value) else {
            throw ImageServiceError(
                .invalidFilterArgument, "\(filter): '\(text ?? "")' is not a whole number in \(range)")
        }
        return value
    }

    private static func double(_ text: String?, _ filter: String, in range: ClosedRange<Double>)
        throws(ImageServiceError) -> Double
    {
        guard let text, let value = Double(text), value.isFinite, range.contains(value) else {
            throw ImageServiceError(.invalidFilterArgument, "\(filter): '\(text ?? "")' is not a number in \(range)")
        }
        return value
    }

    private static func bool(_ text: String?, _ filter: String) throws(ImageServiceError) -> Bool {
        switch text?.lowercased() {
        case "true"?, "1"?: return true
        case "false"?, "0"?, nil: return false
        default:
            throw ImageServiceError(.invalidFilterArgument, "\(filter): '\(text ?? "")' is not true or false")
        }
    }

    /// `curve([(x,y),…],[…],[…],[…])`: the list split on commas comes back as four bracketed
    /// lists of points, x rising within 0…255.
    private static func curve(_ arguments: [String]) throws(ImageServiceError) -> ImageOperations.Filter {
        let text = arguments.joined(separator: ",").filter { !$0.isWhitespace }
        var lists: [[Int]] = []
        var current: [Int]?
        var number = ""
        for character in text {
            switch character {
            case "[": current = []
            case "]":
                guard let points = current else { break }
                lists.append(points)
                current = nil
            case "0"..."9": number.append(character)
            case ",", ")":
                if !number.isEmpty, current != nil { current?.append(Int(number) ?? 256) }
                number = ""
            default: break
            }
        }
        let valid =
            lists.count == 4
            && lists.allSatisfy { points in
                !points.isEmpty && points.count % 2 == 0 && points.allSatisfy { (0...255).contains($0) }
                    && stride(from: 2, to: points.count, by: 2).allSatisfy { points[$0] > points[$0 - 2] }
            }
        guard valid else {
            throw ImageServiceError(
                .invalidFilterArgument, "curve: four lists of points [(x,y),…] with x rising in 0…255 were expected")
        }
        return .curve(all: lists[0], red: lists[1], green: lists[2], blue: lists[3])
    }

    /// thumbor-video-engine's still position: `12`, `1.5`, `00:12`, `01:02:03.25`; a negative
    /// one is the start. Nil when it is none of those.
    static func position(_ text: String) -> Double? {
        let negative = text.hasPrefix("-")
        let parts = (negative ? String(text.dropFirst()) : text).split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var seconds = 0.0
        for (index, part) in parts.enumerated() {
            let isLast = index == parts.count - 1
            guard !part.isEmpty, part.allSatisfy({ $0.isASCII && ($0.isNumber || (isLast && $0 == ".")) }),
                let value = Double(part), value.isFinite
            else { return nil }
            if parts.count > 1 && part.split(separator: ".")[0].count != 2 { return nil }
            seconds = seconds * 60 + value
        }
        if negative { return 0 }
        return seconds <= 864_000 ? seconds : nil
    }

    private static func expect(_ arguments: [String], _ name: String, _ counts: ClosedRange<Int>)
        throws(ImageServiceError)
    {
        guard counts.contains(arguments.count) else {
            throw ImageServiceError(
                .invalidFilterArgument,
                "\(name) takes \(counts.lowerBound == counts.upperBound ? "\(counts.lowerBound)" : "\(counts.lowerBound) to \(counts.upperBound)") arguments"
            )
        }
    }

    private static func color(_ text: String, _ filter: String) throws(ImageServiceError) -> ImageOperations.Color {
        guard let color = ImageOperations.Color(urlText: text) else {
            throw ImageServiceError(.invalidFilterArgument, "\(filter): '\(text)' is not a colour")
        }
        return color
    }

    static func apply(_ name: String, _ arguments: [String], to operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        switch name {
        case "quality":
            try expect(arguments, name, 1...1)
            operations.quality = try int(arguments[0], name, in: 0...100)
        case "format":
            try expect(arguments, name, 1...1)
            let asked = arguments[0].lowercased()
            if asked == "best" {  // ImageKit's extension: the smallest the client accepts
                (operations.format, operations.bestFormat) = (nil, true)
                return
            }
            let value = asked == "jpg" ? "jpeg" : asked == "heif" ? "heic" : asked
            guard let format = ImageOperations.Format(rawValue: value), format != .tiff, format != .bmp else {
                throw ImageServiceError(
                    .invalidFilterArgument,
                    "format: '\(arguments[0])' is not jpeg, png, webp, avif, gif, heic (heif), jxl, mp4 or webm")
            }
            operations.format = format
        case "blur":
            try expect(arguments, name, 1...2)
            let radius = try double(arguments[0], name, in: 0...150)
            let sigma = arguments.count > 1 ? try double(arguments[1], name, in: 0...150) : nil
            operations.filters.append(.blur(radius: radius, sigma: sigma))
        case "rotate":
            try expect(arguments, name, 1...1)
            let angle = try int(arguments[0], name, in: -3600...3600)
            guard angle % 90 == 0 else {
                throw ImageServiceError(.invalidFilterArgument, "rotate: the angle must be a multiple of 90")
            }
            // thumbor turns counter-clockwise (PIL's convention); the operations, clockwise.
            operations.rotate = ((operations.rotate - angle) % 360 + 360) % 360
        case "grayscale":
            try expect(arguments, name, 0...0)
            operations.filters.append(.grayscale)
        case "round_corner":
            try expect(arguments, name, 4...5)
            let radii = arguments[0].split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard radii.count <= 2 else {
                throw ImageServiceError(.invalidFilterArgument, "round_corner: 'a|b' at most")
            }
            let a = try int(radii[0], name, in: 0...10_000)
            let b = radii.count > 1 ? try int(radii[1], name, in: 0...10_000) : a
            let red = try int(arguments[1], name, in: 0...255), green = try int(arguments[2], name, in: 0...255)
            let blue = try int(arguments[3], name, in: 0...255)
            let transparent = arguments.count > 4 ? try bool(arguments[4], name) : false
            operations.filters.append(
                .roundCorner(
                    a: a, b: b, color: .init(red: UInt8(red), green: UInt8(green), blue: UInt8(blue)),
                    transparent: transparent))
        case "fill":
            try expect(arguments, name, 1...2)
            switch arguments[0].lowercased() {
            case "blur": operations.fill = .blur
            case "auto": operations.fill = .auto
            default: operations.fill = .color(try color(arguments[0], name))
            }
            operations.extend = true
        case "background_color":
            try expect(arguments, name, 1...1)
            operations.background = try color(arguments[0], name)
        case "brightness":
            try expect(arguments, name, 1...1)
            operations.filters.append(.brightness(try int(arguments[0], name, in: -100...100)))
        case "contrast":
            try expect(arguments, name, 1...1)
            operations.filters.append(.contrast(try int(arguments[0], name, in: -100...100)))
        case "saturation":
            try expect(arguments, name, 1...1)
            operations.filters.append(.saturation(try double(arguments[0], name, in: 0...100)))
        case "rgb":
            try expect(arguments, name, 3...3)
            operations.filters.append(
                .rgb(
                    red: try int(arguments[0], name, in: -100...100),
                    green: try int(arguments[1], name, in: -100...100),
                    blue: try int(arguments[2], name, in: -100...100)))
        case "sharpen":
            try expect(arguments, name, 3...3)
            operations.filters.append(
                .sharpen(
                    amount: try double(arguments[0], name, in: 0...100),
                    radius: try double(arguments[1], name, in: 0...100),
                    luminanceOnly: try bool(arguments[2], name)))
        case "noise":
            try expect(arguments, name, 1...1)
            operations.filters.append(.noise(try int(arguments[0], name, in: 0...100)))
        case "strip_exif":
            try expect(arguments, name, 0...0)
            operations.stripMetadata = true
        case "strip_icc":
            try expect(arguments, name, 0...0)
            operations.stripColorProfile = true
        case "upscale":
            try expect(arguments, name, 0...0)
            operations.enlarge = true
        case "no_upscale":
            try expect(arguments, name, 0...0)
            operations.enlarge = false
        case "stretch":
            try expect(arguments, name, 0...0)
            // thumbor: stretch() replaces the auto crop of a plain WxH; fit-in ignores it.
            if operations.resizeMode == .fill { operations.resizeMode = .force }
        case "proportion":
            try expect(arguments, name, 1...1)
            operations.proportion = try double(arguments[0], name, in: 0.001...100)
        case "focal" where arguments.isEmpty || arguments == [""]:
            break  // thumbor ignores a focal() without a region
        case "gifv":
            // thumbor's (and thumbor-video-engine's): an animated result becomes a video, MP4
            // unless webm is asked; a still stays an image.
            try expect(arguments, name, 0...1)
            switch arguments.first?.lowercased() ?? "" {
            case "", "mp4": operations.animationAsVideo = .mp4
            case "webm": operations.animationAsVideo = .webm
            default: throw ImageServiceError(.invalidFilterArgument, "gifv: '\(arguments[0])' is not mp4 or webm")
            }
        case "still":
            // thumbor-video-engine's: a still of an animation or video, at a position given as
            // seconds or [HH:]MM:SS[.fraction] (the first frame without one).
            try expect(arguments, name, 0...1)
            operations.still = true
            if let position = arguments.first, !position.isEmpty {
                guard let seconds = Self.position(position) else {
                    throw ImageServiceError(
                        .invalidFilterArgument, "still: '\(position)' is not seconds or [HH:]MM:SS[.fraction]")
                }
                operations.videoTime = seconds
            } else {
                operations.videoTime = 0
            }
        case "redeye":
            // thumbor's redeye() acts only inside eyes its OpenCV detector finds, and does nothing
            // without a detector configured (its default). ImageKit has no eye detector: it does
            // the same nothing rather than redden or grey whatever is red.
            try expect(arguments, name, 0...0)
        case "extract_focal":
            // Handled with the source (an inner thumbor URL's crop becomes the focal region).
            try expect(arguments, name, 0...0)
            operations.extractsFocal = true
        case "frame":
            try expect(arguments, name, 1...1)
            guard !arguments[0].isEmpty else {
                throw ImageServiceError(.invalidFilterArgument, "frame: the picture's URL is empty")
            }
            operations.filters.append(.frame(url: arguments[0]))
        case "equalize":
            try expect(arguments, name, 0...0)
            operations.filters.append(.equalize)
        case "curve":
            operations.filters.append(try curve(arguments))
        case "focal":
            try expect(arguments, name, 1...1)
            guard case .region(let left, let top, let right, let bottom)? = parseCrop(arguments[0]), right > left,
                bottom > top
            else {
                throw ImageServiceError(.invalidFilterArgument, "focal: '\(arguments[0])' is not AxB:CxD")
            }
            operations.gravity = .focalRegion(left: left, top: top, right: right, bottom: bottom)
        case "max_bytes":
            try expect(arguments, name, 1...1)
            operations.maxBytes = try int(arguments[0], name, in: 1...(1 << 30))
        // `/meta/`'s placeholders and colours, with imgproxy's `/info` names (ImageKit extensions).
        case "blurhash":
            try expect(arguments, name, 2...2)
            let x = try int(arguments[0], name, in: 1...9), y = try int(arguments[1], name, in: 1...9)
            (operations.infoFacts.blurHashX, operations.infoFacts.blurHashY) = (x, y)
        case "thumb_hash":
            try expect(arguments, name, 0...0)
            operations.infoFacts.thumbHash = true
        case "average":
            try expect(arguments, name, 0...1)
            operations.infoFacts.average = true
            operations.infoFacts.averageIgnoresTransparent = arguments.isEmpty ? true : try bool(arguments[0], name)
        case "palette":
            try expect(arguments, name, 1...1)
            operations.infoFacts.paletteColors = try int(arguments[0], name, in: 2...256)
        case "perceptual_hash":
            try expect(arguments, name, 0...0)
            operations.infoFacts.perceptualHash = true
        case "dominant_colors":
            try expect(arguments, name, 0...1)
            operations.infoFacts.dominantColors = true
            operations.infoFacts.buildsMissedColors = arguments.isEmpty ? false : try bool(arguments[0], name)
        case "calc_hashsums":
            operations.infoFacts.hashsums = try ImgproxyURL.hashsums(arguments, name)
        case "autoquality":
            operations.autoQuality = try ImageOperations.AutoQualityRequest(arguments: arguments, option: name)
        case "max_age":
            try expect(arguments, name, 1...1)
            operations.maxAge = try int(arguments[0], name, in: 0...(10 * 365 * 86_400))
        case "watermark":
            try expect(arguments, name, 4...6)
            // The position is read here, so that a bad one is a 400 before anything is fetched.
            let x = try ImageOperations.WatermarkPosition(arguments[1])
            let y = try ImageOperations.WatermarkPosition(arguments[2])
            let alpha = try int(arguments[3], name, in: 0...100)
            let widthRatio =
                arguments.count > 4 && arguments[4] != "none" ? try double(arguments[4], name, in: 0...100) : nil
            let heightRatio =
                arguments.count > 5 && arguments[5] != "none" ? try double(arguments[5], name, in: 0...100) : nil
            operations.filters.append(
                .watermark(
                    url: arguments[0], x: x, y: y, alpha: alpha, widthRatio: widthRatio,
                    heightRatio: heightRatio))
        default:
            throw ImageServiceError(.unknownFilter, "unknown filter '\(name)'")
        }
    }
}
