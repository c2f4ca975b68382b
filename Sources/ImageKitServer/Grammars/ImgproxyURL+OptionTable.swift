import Foundation

// imgproxy's processing options by short name: an option is a row here (its argument count and
// what it sets), its long names in `ImgproxyURL.aliases`, and its spelling in
// `ImgproxyURL+Rendering.swift`.
extension ImgproxyURL {
    static let optionReaders: [String: ImgproxyOptionReader] = [
        "rs": .init(1...5) { arguments, operations throws(ImageServiceError) in
            if !arguments[0].isEmpty { operations.resizeMode = try resizeMode(arguments[0], arguments.option) }
            try size(arguments.values.dropFirst(), arguments.option, into: &operations)
        },
        "s": .init(1...4) { arguments, operations throws(ImageServiceError) in
            try size(arguments.values[...], arguments.option, into: &operations)
        },
        "rt": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.resizeMode = try resizeMode(arguments[0], arguments.option)
        },
        "w": .init(1...1) { arguments, operations throws(ImageServiceError) in operations.width = try arguments.int(0)
        },
        "h": .init(1...1) { arguments, operations throws(ImageServiceError) in operations.height = try arguments.int(0)
        },
        "mw": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.minWidth = try arguments.int(0)
        },
        "mh": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.minHeight = try arguments.int(0)
        },
        "z": .init(1...2) { arguments, operations throws(ImageServiceError) in
            operations.zoomX = try arguments.double(0, in: 0.0001...100)
            operations.zoomY = arguments.count > 1 ? try arguments.double(1, in: 0.0001...100) : operations.zoomX
        },
        "dpr": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.dpr = try arguments.double(0, in: 0.0001...8)
        },
        "el": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.enlarge = try arguments.bool(0)
        },
        "ex": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.extend = try arguments.bool(0)
        },
        "g": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.gravity = try gravity(arguments.values, arguments.option)
        },
        "c": .init(2...5) { arguments, operations throws(ImageServiceError) in
            let gravity =
                arguments.count > 2 ? try gravity(Array(arguments.values.dropFirst(2)), arguments.option) : nil
            operations.crop = .size(width: try arguments.double(0), height: try arguments.double(1), gravity: gravity)
        },
        "t": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.trim = ImageOperations.Trim(tolerance: try arguments.double(0, in: 0...442))
        },
        "pd": .init(1...4, readPadding),
        "ar": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.autoRotate = try arguments.bool(0)
        },
        "rot": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let angle = try arguments.int(0, in: -3600...3600)
            guard angle % 90 == 0 else { throw invalid(arguments.option, "the angle must be a multiple of 90") }
            operations.rotate = (angle % 360 + 360) % 360
        },
        "fl": .init(1...2) { arguments, operations throws(ImageServiceError) in
            operations.flipHorizontal = try arguments.bool(0)
            operations.flipVertical = arguments.count > 1 ? try arguments.bool(1) : false
        },
        "bg": .init(nil, readBackground),
        "bl": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let sigma = try arguments.double(0, in: 0...1000)
            if sigma > 0 { operations.filters.append(.blur(radius: 0, sigma: sigma)) }
        },
        "sh": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let sigma = try arguments.double(0, in: 0...1000)
            if sigma > 0 { operations.filters.append(.sharpen(strength: 1, sigma: sigma, luminanceOnly: false)) }
        },
        "pix": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let size = try arguments.int(0, in: 0...10_000)
            if size > 1 { operations.filters.append(.pixelate(size: size)) }
        },
        "q": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let quality = try arguments.int(0, in: 0...100)
            operations.quality = quality == 0 ? nil : quality  // 0: the default
        },
        "fq": .init(nil) { arguments, operations throws(ImageServiceError) in
            guard !arguments.values.isEmpty, arguments.count % 2 == 0 else {
                throw invalid(arguments.option, "takes format:quality pairs")
            }
            for index in stride(from: 0, to: arguments.count, by: 2) {
                operations.formatQuality[try format(arguments[index])] = try arguments.int(index + 1, in: 1...100)
            }
        },
        "aq": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.autoQuality = try ImageOperations.AutoQualityRequest(
                arguments: arguments.values, option: arguments.option)
        },
        "mb": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let bytes = try arguments.int(0, in: 0...(1 << 30))
            operations.maxBytes = bytes == 0 ? nil : bytes
        },
        "f": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.bestFormat = arguments[0] == "best"
            operations.format = arguments[0].isEmpty || arguments[0] == "best" ? nil : try format(arguments[0])
        },
        "sm": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.stripMetadata = try arguments.bool(0)
        },
        "scp": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.stripColorProfile = try arguments.bool(0)
        },
        "kcr": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.keepCopyright = try arguments.bool(0)
        },
        "cb": .init(1...1) { arguments, operations in
            operations.cacheBuster = arguments[0].isEmpty ? nil : arguments[0]
        },
        "exp": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.expires = try arguments.int(0, in: 0...Int(Int32.max) * 2)
        },
        "fn": .init(1...2, readFilename),
        "att": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.returnAttachment = try arguments.bool(0)
        },
        "vts": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.videoTime = try arguments.double(0, in: 0...864_000)
        },
        "vtk": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.videoKeyframes = try arguments.bool(0)
        },
        "vtt": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.videoStills = try videoStills(arguments.values, arguments.option, sprite: true)
        },
        "vta": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.videoStills = try videoStills(arguments.values, arguments.option, sprite: false)
        },
        "bh": .init(2...2) { arguments, operations throws(ImageServiceError) in
            let x = try arguments.int(0, in: 0...9), y = try arguments.int(1, in: 0...9)
            (operations.infoFacts.blurHashX, operations.infoFacts.blurHashY) = x > 0 && y > 0 ? (x, y) : (0, 0)
        },
        "th": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.thumbHash = try arguments.bool(0)
        },
        "avg": .init(1...2) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.average = try arguments.bool(0)
            operations.infoFacts.averageIgnoresTransparent = try arguments.bool(1, absent: true)
        },
        "p": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let colours = try arguments.int(0, in: 0...256)
            guard colours != 1 else { throw invalid(arguments.option, "a palette has 2 to 256 colours") }
            operations.infoFacts.paletteColors = colours
        },
        "ph": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.perceptualHash = try arguments.bool(0)
        },
        "dc": .init(1...2) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.dominantColors = try arguments.bool(0)
            operations.infoFacts.buildsMissedColors = try arguments.bool(1, absent: false)
        },
        "chs": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.hashsums = try hashsums(arguments.values, arguments.option)
        },
        "pr": .init(nil, readPresets),
    ]

    /// `pd:top[:right[:bottom[:left]]]`, CSS's shorthand; an empty value is 0.
    static func readPadding(_ arguments: OptionArguments, _ operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        let values = try arguments.values.map { (text: String) throws(ImageServiceError) -> Int in
            try int(text.isEmpty ? "0" : text, arguments.option)
        }
        switch values.count {
        case 1: operations.padding = [values[0], values[0], values[0], values[0]]
        case 2: operations.padding = [values[0], values[1], values[0], values[1]]
        case 3: operations.padding = [values[0], values[1], values[2], values[1]]
        default: operations.padding = values
        }
        if operations.padding == [0, 0, 0, 0] { operations.padding = nil }
    }

    /// `bg:R:G:B` or `bg:HEX`; an empty one clears it.
    static func readBackground(_ arguments: OptionArguments, _ operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        if arguments.count == 3 {
            operations.background = .init(
                red: UInt8(try arguments.int(0, in: 0...255)), green: UInt8(try arguments.int(1, in: 0...255)),
                blue: UInt8(try arguments.int(2, in: 0...255)))
        } else if arguments.count == 1, let color = ImageOperations.Color(urlText: arguments[0]) {
            operations.background = color
        } else if arguments.values.isEmpty || arguments.values == [""] {
            operations.background = nil
        } else {
            throw invalid(arguments.option, "is R:G:B or a hex colour")
        }
    }

    /// `fn:NAME[:ENCODED]`: a file name for `Content-Disposition` (base64url when ENCODED).
    static func readFilename(_ arguments: OptionArguments, _ operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        var name = arguments[0]
        if arguments.count > 1, try arguments.bool(1) {
            guard let data = Base64URL.decode(name), let decoded = String(data: data, encoding: .utf8) else {
                throw invalid(arguments.option, "the encoded file name is not base64url")
            }
            name = decoded
        }
        guard !name.contains("/"), !name.contains("\""), !name.contains("\n"), name.utf8.count <= 255 else {
            throw invalid(arguments.option, "the file name may not hold '/', quotes or newlines")
        }
        operations.filename = name.isEmpty ? nil : name
    }

    /// `pr:NAME[:NAME…]`: each preset's options in turn, nested at most four deep.
    static func readPresets(_ arguments: OptionArguments, _ operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        guard arguments.depth < 4 else { throw invalid(arguments.option, "presets nest too deep") }
        for presetName in arguments.values {
            guard let preset = arguments.presets[presetName] else {
                throw ImageServiceError(.unknownPreset, "unknown preset '\(presetName)'")
            }
            try apply(preset, to: &operations, presets: arguments.presets, depth: arguments.depth + 1)
        }
    }
}

/// One imgproxy option's reader (a row of ``ImgproxyURL/optionReaders``).
typealias ImgproxyOptionReader = OptionReader<OptionArguments>

/// An option's arguments as the URL spelled them, read with the option's name (as written) in
/// every error; the presets for `pr`.
struct OptionArguments {
    var option: String
    var values: [String]
    var presets: [String: [String]]
    var depth: Int

    var count: Int { values.count }
    subscript(index: Int) -> String { values[index] }

    func int(_ index: Int, in range: ClosedRange<Int> = 0...100_000) throws(ImageServiceError) -> Int {
        try ImgproxyURL.int(values[index], option, in: range)
    }

    func double(_ index: Int, in range: ClosedRange<Double> = 0...100_000) throws(ImageServiceError) -> Double {
        try ImgproxyURL.double(values[index], option, in: range)
    }

    /// Go's `strconv.ParseBool`; `absent` when the argument is not given or empty.
    func bool(_ index: Int, absent: Bool? = nil) throws(ImageServiceError) -> Bool {
        if let absent, index >= values.count || values[index].isEmpty { return absent }
        return try ImgproxyURL.bool(values[index], option)
    }
}
