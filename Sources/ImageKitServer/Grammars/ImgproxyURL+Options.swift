import Foundation

// imgproxy's processing options (`name:arg:arg/…`, presets expanded), each read into the
// operations with its arguments checked.
extension ImgproxyURL {
    /// Long names → short names; options are handled by their short name.
    static let aliases: [String: String] = [
        "resize": "rs", "size": "s", "resizing_type": "rt", "width": "w", "height": "h", "min-width": "mw",
        "min_width": "mw",
        "min-height": "mh", "min_height": "mh", "zoom": "z", "enlarge": "el", "extend": "ex", "gravity": "g",
        "crop": "c",
        "trim": "t", "padding": "pd", "auto_rotate": "ar", "rotate": "rot", "flip": "fl", "background": "bg",
        "blur": "bl",
        "sharpen": "sh", "pixelate": "pix", "quality": "q", "format_quality": "fq", "max_bytes": "mb",
        "autoquality": "aq", "format": "f",
        "ext": "f", "strip_metadata": "sm", "strip_color_profile": "scp", "keep_copyright": "kcr", "cachebuster": "cb",
        "expires": "exp", "filename": "fn", "return_attachment": "att", "preset": "pr",
        "video_thumbnail_second": "vts", "video_thumbnail_keyframes": "vtk", "video_thumbnail_tile": "vtt",
        "video_thumbnail_animation": "vta", "blurhash": "bh", "thumb_hash": "th", "average": "avg", "palette": "p",
        "perceptual_hash": "ph", "phash": "ph", "dominant_colors": "dc", "calc_hashsums": "chs",
    ]

    static func apply(
        _ options: [String], to operations: inout ImageOperations, presets: [String: [String]], depth: Int
    ) throws(ImageServiceError) {
        for option in options {
            var arguments = option.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            let name = arguments.removeFirst()
            try apply(aliases[name] ?? name, arguments, original: name, to: &operations, presets: presets, depth: depth)
        }
    }

    /// `calc_hashsums`' types, each once, in the order given (none: empty or left out).
    static func hashsums(_ arguments: [String], _ option: String) throws(ImageServiceError)
        -> [ImageOperations.InfoFacts.Hashsum]
    {
        var types: [ImageOperations.InfoFacts.Hashsum] = []
        for text in arguments where !text.isEmpty && text != "none" {
            guard let type = ImageOperations.InfoFacts.Hashsum(rawValue: text) else {
                throw invalid(option, "'\(text)' is not md5, sha1, sha256 or sha512")
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    private static func invalid(_ option: String, _ message: String) -> ImageServiceError {
        ImageServiceError(.invalidOption, "\(option): \(message)")
    }

    private static func int(_ text: String, _ option: String, in range: ClosedRange<Int> = 0...100_000)
        throws(ImageServiceError) -> Int
    {
        guard let value = Int(text), range.contains(value) else {
            throw invalid(option, "'\(text)' is not a whole number in \(range)")
        }
        return value
    }

    private static func double(_ text: String, _ option: String, in range: ClosedRange<Double> = 0...100_000)
        throws(ImageServiceError) -> Double
    {
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw invalid(option, "'\(text)' is not a number in \(range)")
        }
        return value
    }

    /// Go's `strconv.ParseBool`, which imgproxy uses.
    private static func bool(_ text: String, _ option: String) throws(ImageServiceError) -> Bool {
        switch text {
        case "1", "t", "T", "true", "TRUE", "True": return true
        case "0", "f", "F", "false", "FALSE", "False": return false
        default: throw invalid(option, "'\(text)' is not a boolean")
        }
    }

    private static func count(_ arguments: [String], _ option: String, _ range: ClosedRange<Int>)
        throws(ImageServiceError)
    {
        guard range.contains(arguments.count) else {
            throw invalid(option, "takes \(range.lowerBound) to \(range.upperBound) arguments")
        }
    }

    /// `vtt:step:columns:rows:w:h[:extend:trim:fill:fx:fy]` and
    /// `vta:step:delay:frames:w:h[:extend:trim:fill:fx:fy]`; a step of 0 turns them off.
    static func videoStills(_ arguments: [String], _ option: String, sprite: Bool)
        throws(ImageServiceError) -> ImageOperations.VideoStills?
    {
        try count(arguments, option, 5...10)
        let step = try double(arguments[0], option, in: -864_000...864_000)
        guard step != 0 else { return nil }
        let layout: ImageOperations.VideoStills.Layout =
            sprite
            ? .sprite(
                columns: try int(arguments[1], option, in: 1...100), rows: try int(arguments[2], option, in: 1...100))
            : .animation(
                frames: try int(arguments[2], option, in: 1...1_000),
                delay: try int(arguments[1], option, in: 1...60_000))
        var stills = ImageOperations.VideoStills(
            layout: layout, step: step, width: try int(arguments[3], option, in: 0...16_384),
            height: try int(arguments[4], option, in: 0...16_384))
        func flag(_ index: Int) throws(ImageServiceError) -> Bool {
            index < arguments.count && !arguments[index].isEmpty ? try bool(arguments[index], option) : false
        }
        func fraction(_ index: Int) throws(ImageServiceError) -> Double {
            index < arguments.count && !arguments[index].isEmpty ? try double(arguments[index], option, in: 0...1) : 0.5
        }
        stills.extend = try flag(5)
        stills.trim = try flag(6)
        stills.fill = try flag(7)
        stills.focusX = try fraction(8)
        stills.focusY = try fraction(9)
        return stills
    }

    static func format(_ text: String) throws(ImageServiceError) -> ImageOperations.Format {
        let value = text.lowercased() == "jpg" ? "jpeg" : text.lowercased()
        guard let format = ImageOperations.Format(rawValue: value) else {
            throw ImageServiceError(.invalidOption, "format: '\(text)' is not a format this service writes")
        }
        return format
    }

    static func resizeMode(_ text: String, _ option: String) throws(ImageServiceError) -> ImageOperations.ResizeMode {
        guard let mode = ImageOperations.ResizeMode(rawValue: text), mode != .cover else {
            throw invalid(option, "'\(text)' is not fit, fill, fill-down, force or auto")
        }
        return mode
    }

    static func gravity(_ arguments: [String], _ option: String) throws(ImageServiceError) -> ImageOperations.Gravity {
        guard let type = arguments.first else { throw invalid(option, "needs a gravity type") }
        if type == "fp" {
            guard arguments.count == 3 else { throw invalid(option, "fp takes x and y") }
            return .focalPoint(
                x: try double(arguments[1], option, in: 0...1), y: try double(arguments[2], option, in: 0...1))
        }
        guard arguments.count == 1 else { throw invalid(option, "gravity offsets are not supported") }
        switch type {
        case "ce": return .center
        case "no": return .north
        case "so": return .south
        case "ea": return .east
        case "we": return .west
        case "noea": return .northEast
        case "nowe": return .northWest
        case "soea": return .southEast
        case "sowe": return .southWest
        case "sm": return .smart
        default: throw invalid(option, "'\(type)' is not a gravity")
        }
    }

    private static func size(_ arguments: ArraySlice<String>, _ option: String, into operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        let values = Array(arguments)
        if values.count > 0, !values[0].isEmpty { operations.width = try int(values[0], option) }
        if values.count > 1, !values[1].isEmpty { operations.height = try int(values[1], option) }
        if values.count > 2, !values[2].isEmpty { operations.enlarge = try bool(values[2], option) }
        if values.count > 3, !values[3].isEmpty { operations.extend = try bool(values[3], option) }
        if values.count > 4 { throw invalid(option, "extend gravity is not supported") }
    }

    static func apply(
        _ name: String, _ arguments: [String], original: String, to operations: inout ImageOperations,
        presets: [String: [String]], depth: Int
    ) throws(ImageServiceError) {
        let option = original
        switch name {
        case "rs":
            try count(arguments, option, 1...5)
            if !arguments[0].isEmpty { operations.resizeMode = try resizeMode(arguments[0], option) }
            try size(arguments.dropFirst(), option, into: &operations)
        case "s":
            try count(arguments, option, 1...4)
            try size(arguments[...], option, into: &operations)
        case "rt":
            try count(arguments, option, 1...1)
            operations.resizeMode = try resizeMode(arguments[0], option)
        case "w":
            try count(arguments, option, 1...1)
            operations.width = try int(arguments[0], option)
        case "h":
            try count(arguments, option, 1...1)
            operations.height = try int(arguments[0], option)
        case "mw":
            try count(arguments, option, 1...1)
            operations.minWidth = try int(arguments[0], option)
        case "mh":
            try count(arguments, option, 1...1)
            operations.minHeight = try int(arguments[0], option)
        case "z":
            try count(arguments, option, 1...2)
            operations.zoomX = try double(arguments[0], option, in: 0.0001...100)
            operations.zoomY =
                arguments.count > 1 ? try double(arguments[1], option, in: 0.0001...100) : operations.zoomX
        case "dpr":
            try count(arguments, option, 1...1)
            operations.dpr = try double(arguments[0], option, in: 0.0001...8)
        case "el":
            try count(arguments, option, 1...1)
            operations.enlarge = try bool(arguments[0], option)
        case "ex":
            try count(arguments, option, 1...1)
            operations.extend = try bool(arguments[0], option)
        case "g":
            operations.gravity = try gravity(arguments, option)
        case "c":
            try count(arguments, option, 2...5)
            let width = try double(arguments[0], option), height = try double(arguments[1], option)
            let gravity = arguments.count > 2 ? try self.gravity(Array(arguments.dropFirst(2)), option) : nil
            operations.crop = .size(width: width, height: height, gravity: gravity)
        case "t":
            try count(arguments, option, 1...1)
            operations.trim = ImageOperations.Trim(tolerance: try double(arguments[0], option, in: 0...442))
        case "pd":
            try count(arguments, option, 1...4)
            let values = try arguments.map { (text: String) throws(ImageServiceError) -> Int in
                try int(text.isEmpty ? "0" : text, option)
            }
            switch values.count {
            case 1: operations.padding = [values[0], values[0], values[0], values[0]]
            case 2: operations.padding = [values[0], values[1], values[0], values[1]]
            case 3: operations.padding = [values[0], values[1], values[2], values[1]]
            default: operations.padding = values
            }
            if operations.padding == [0, 0, 0, 0] { operations.padding = nil }
        case "ar":
            try count(arguments, option, 1...1)
            operations.autoRotate = try bool(arguments[0], option)
        case "rot":
            try count(arguments, option, 1...1)
            let angle = try int(arguments[0], option, in: -3600...3600)
            guard angle % 90 == 0 else { throw invalid(option, "the angle must be a multiple of 90") }
            operations.rotate = (angle % 360 + 360) % 360
        case "fl":
            try count(arguments, option, 1...2)
            operations.flipHorizontal = try bool(arguments[0], option)
            operations.flipVertical = arguments.count > 1 ? try bool(arguments[1], option) : false
        case "bg":
            if arguments.count == 3 {
                operations.background = .init(
                    red: UInt8(try int(arguments[0], option, in: 0...255)),
                    green: UInt8(try int(arguments[1], option, in: 0...255)),
                    blue: UInt8(try int(arguments[2], option, in: 0...255)))
            } else if arguments.count == 1, let color = ImageOperations.Color(urlText: arguments[0]) {
                operations.background = color
            } else if arguments.isEmpty || arguments == [""] {
                operations.background = nil
            } else {
                throw invalid(option, "is R:G:B or a hex colour")
            }
        case "bl":
            try count(arguments, option, 1...1)
            let sigma = try double(arguments[0], option, in: 0...1000)
            if sigma > 0 { operations.filters.append(.blur(radius: 0, sigma: sigma)) }
        case "sh":
            try count(arguments, option, 1...1)
            let sigma = try double(arguments[0], option, in: 0...1000)
            if sigma > 0 { operations.filters.append(.sharpen(amount: sigma, radius: 0, luminanceOnly: false)) }
        case "pix":
            try count(arguments, option, 1...1)
            let size = try int(arguments[0], option, in: 0...10_000)
            if size > 1 { operations.filters.append(.pixelate(size: size)) }
        case "q":
            try count(arguments, option, 1...1)
            let quality = try int(arguments[0], option, in: 0...100)
            operations.quality = quality == 0 ? nil : quality  // 0: the default
        case "fq":
            guard !arguments.isEmpty, arguments.count % 2 == 0 else {
                throw invalid(option, "takes format:quality pairs")
            }
            for index in stride(from: 0, to: arguments.count, by: 2) {
                operations.formatQuality[try format(arguments[index])] = try int(
                    arguments[index + 1], option, in: 1...100)
            }
        case "aq":
            operations.autoQuality = try ImageOperations.AutoQualityRequest(arguments: arguments, option: option)
        case "mb":
            try count(arguments, option, 1...1)
            let bytes = try int(arguments[0], option, in: 0...(1 << 30))
            operations.maxBytes = bytes == 0 ? nil : bytes
        case "f":
            try count(arguments, option, 1...1)
            operations.bestFormat = arguments[0] == "best"
            operations.format = arguments[0].isEmpty || arguments[0] == "best" ? nil : try format(arguments[0])
        case "sm":
            try count(arguments, option, 1...1)
            operations.stripMetadata = try bool(arguments[0], option)
        case "scp":
            try count(arguments, option, 1...1)
            operations.stripColorProfile = try bool(arguments[0], option)
        case "kcr":
            try count(arguments, option, 1...1)
            operations.keepCopyright = try bool(arguments[0], option)
        case "cb":
            try count(arguments, option, 1...1)
            operations.cacheBuster = arguments[0].isEmpty ? nil : arguments[0]
        case "exp":
            try count(arguments, option, 1...1)
            operations.expires = try int(arguments[0], option, in: 0...Int(Int32.max) * 2)
        case "fn":
            try count(arguments, option, 1...2)
            var name = arguments[0]
            if arguments.count > 1, try bool(arguments[1], option) {
                guard let data = Base64URL.decode(name), let decoded = String(data: data, encoding: .utf8) else {
                    throw invalid(option, "the encoded file name is not base64url")
                }
                name = decoded
            }
            guard !name.contains("/"), !name.contains("\""), !name.contains("\n"), name.utf8.count <= 255 else {
                throw invalid(option, "the file name may not hold '/', quotes or newlines")
            }
            operations.filename = name.isEmpty ? nil : name
        case "att":
            try count(arguments, option, 1...1)
            operations.returnAttachment = try bool(arguments[0], option)
        case "vts":
            try count(arguments, option, 1...1)
            operations.videoTime = try double(arguments[0], option, in: 0...864_000)
        case "vtk":
            try count(arguments, option, 1...1)
            operations.videoKeyframes = try bool(arguments[0], option)
        case "bh":
            try count(arguments, option, 2...2)
            let x = try int(arguments[0], option, in: 0...9), y = try int(arguments[1], option, in: 0...9)
            (operations.infoFacts.blurHashX, operations.infoFacts.blurHashY) = x > 0 && y > 0 ? (x, y) : (0, 0)
        case "th":
            try count(arguments, option, 1...1)
            operations.infoFacts.thumbHash = try bool(arguments[0], option)
        case "avg":
            try count(arguments, option, 1...2)
            operations.infoFacts.average = try bool(arguments[0], option)
            operations.infoFacts.averageIgnoresTransparent =
                arguments.count < 2 || arguments[1].isEmpty ? true : try bool(arguments[1], option)
        case "p":
            try count(arguments, option, 1...1)
            let colours = try int(arguments[0], option, in: 0...256)
            guard colours != 1 else { throw invalid(option, "a palette has 2 to 256 colours") }
            operations.infoFacts.paletteColors = colours
        case "ph":
            try count(arguments, option, 1...1)
            operations.infoFacts.perceptualHash = try bool(arguments[0], option)
        case "dc":
            try count(arguments, option, 1...2)
            operations.infoFacts.dominantColors = try bool(arguments[0], option)
            operations.infoFacts.buildsMissedColors =
                arguments.count > 1 && !arguments[1].isEmpty ? try bool(arguments[1], option) : false
        case "chs":
            operations.infoFacts.hashsums = try hashsums(arguments, option)
        case "vtt", "vta":
            operations.videoStills = try videoStills(arguments, option, sprite: name == "vtt")
        case "pr":
            guard depth < 4 else { throw invalid(option, "presets nest too deep") }
            for presetName in arguments {
                guard let preset = presets[presetName] else {
                    throw ImageServiceError(.unknownPreset, "unknown preset '\(presetName)'")
                }
                try apply(preset, to: &operations, presets: presets, depth: depth + 1)
            }
        default:
            throw ImageServiceError(.unknownOption, "unknown option '\(original)'")
        }
    }

    // MARK: Rendering
}
