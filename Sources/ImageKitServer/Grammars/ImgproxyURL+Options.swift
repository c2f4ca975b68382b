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
            var values = option.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            let name = values.removeFirst()
            guard let reader = optionReaders[aliases[name] ?? name] else {
                throw ImageServiceError(.unknownOption, "unknown option '\(name)'")
            }
            let arguments = OptionArguments(option: name, values: values, presets: presets, depth: depth)
            if let counts = reader.counts { try count(values, name, counts) }
            try reader.read(arguments, &operations)
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

    static func invalid(_ option: String, _ message: String) -> ImageServiceError {
        ImageServiceError(.invalidOption, "\(option): \(message)")
    }

    static func int(_ text: String, _ option: String, in range: ClosedRange<Int> = 0...100_000)
        throws(ImageServiceError) -> Int
    {
        guard let value = Int(text), range.contains(value) else {
            throw invalid(option, "'\(text)' is not a whole number in \(range)")
        }
        return value
    }

    static func double(_ text: String, _ option: String, in range: ClosedRange<Double> = 0...100_000)
        throws(ImageServiceError) -> Double
    {
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw invalid(option, "'\(text)' is not a number in \(range)")
        }
        return value
    }

    /// Go's `strconv.ParseBool`, which imgproxy uses.
    static func bool(_ text: String, _ option: String) throws(ImageServiceError) -> Bool {
        switch text {
        case "1", "t", "T", "true", "TRUE", "True": return true
        case "0", "f", "F", "false", "FALSE", "False": return false
        default: throw invalid(option, "'\(text)' is not a boolean")
        }
    }

    static func count(_ arguments: [String], _ option: String, _ range: ClosedRange<Int>)
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

    static func size(_ arguments: ArraySlice<String>, _ option: String, into operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        let values = Array(arguments)
        if values.count > 0, !values[0].isEmpty { operations.width = try int(values[0], option) }
        if values.count > 1, !values[1].isEmpty { operations.height = try int(values[1], option) }
        if values.count > 2, !values[2].isEmpty { operations.enlarge = try bool(values[2], option) }
        if values.count > 3, !values[3].isEmpty { operations.extend = try bool(values[3], option) }
        if values.count > 4 { throw invalid(option, "extend gravity is not supported") }
    }
}
