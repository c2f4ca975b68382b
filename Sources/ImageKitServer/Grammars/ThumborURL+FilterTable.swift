import Foundation

// thumbor's filters by name: a filter is a row here (its argument count and what it sets) and its
// spelling in `ThumborURL+Rendering.swift`. ImageKit's extensions are marked.
extension ThumborURL {
    static let filterReaders: [String: ThumborFilterReader] = [
        "quality": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.quality = try arguments.int(0, in: 0...100)
        },
        "format": .init(1...1, readFormat),
        "blur": .init(1...2) { arguments, operations throws(ImageServiceError) in
            let radius = try arguments.double(0, in: 0...150)
            let sigma = arguments.count > 1 ? try arguments.double(1, in: 0...150) : nil
            operations.filters.append(.blur(radius: radius, sigma: sigma))
        },
        "rotate": .init(1...1) { arguments, operations throws(ImageServiceError) in
            let angle = try arguments.int(0, in: -3600...3600)
            guard angle % 90 == 0 else {
                throw ImageServiceError(.invalidFilterArgument, "rotate: the angle must be a multiple of 90")
            }
            // thumbor turns counter-clockwise (PIL's convention); the operations, clockwise.
            operations.rotate = ((operations.rotate - angle) % 360 + 360) % 360
        },
        "grayscale": .init(0...0) { _, operations in operations.filters.append(.grayscale) },
        "round_corner": .init(4...5, readRoundCorner),
        "fill": .init(1...2) { arguments, operations throws(ImageServiceError) in
            switch arguments[0].lowercased() {
            case "blur": operations.fill = .blur
            case "auto": operations.fill = .auto
            default: operations.fill = .color(try arguments.color(0))
            }
            operations.extend = true
        },
        "background_color": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.background = try arguments.color(0)
        },
        "brightness": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.filters.append(.brightness(try arguments.int(0, in: -100...100)))
        },
        "contrast": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.filters.append(.contrast(try arguments.int(0, in: -100...100)))
        },
        "saturation": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.filters.append(.saturation(try arguments.double(0, in: 0...100)))
        },
        "rgb": .init(3...3) { arguments, operations throws(ImageServiceError) in
            operations.filters.append(
                .rgb(
                    red: try arguments.int(0, in: -100...100), green: try arguments.int(1, in: -100...100),
                    blue: try arguments.int(2, in: -100...100)))
        },
        "sharpen": .init(3...3) { arguments, operations throws(ImageServiceError) in
            operations.filters.append(
                .sharpen(
                    strength: try arguments.double(0, in: 0...100), sigma: try arguments.double(1, in: 0...100),
                    luminanceOnly: try arguments.bool(2)))
        },
        "noise": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.filters.append(.noise(try arguments.int(0, in: 0...100)))
        },
        "strip_exif": .init(0...0) { _, operations in operations.stripMetadata = true },
        "strip_icc": .init(0...0) { _, operations in operations.stripColorProfile = true },
        "upscale": .init(0...0) { _, operations in operations.enlarge = true },
        "no_upscale": .init(0...0) { _, operations in operations.enlarge = false },
        "stretch": .init(0...0) { _, operations in
            // thumbor: stretch() replaces the auto crop of a plain WxH; fit-in ignores it.
            if operations.resizeMode == .fill { operations.resizeMode = .force }
        },
        "proportion": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.proportion = try arguments.double(0, in: 0.001...100)
        },
        "focal": .init(nil, readFocal),
        // thumbor's and thumbor-video-engine's: an animated result becomes a video, MP4 unless
        // webm is asked; a still stays an image.
        "gifv": .init(0...1) { arguments, operations throws(ImageServiceError) in
            switch arguments.values.first?.lowercased() ?? "" {
            case "", "mp4": operations.animationAsVideo = .mp4
            case "webm": operations.animationAsVideo = .webm
            default: throw ImageServiceError(.invalidFilterArgument, "gifv: '\(arguments[0])' is not mp4 or webm")
            }
        },
        "still": .init(0...1, readStill),
        // thumbor's redeye() acts only inside eyes its OpenCV detector finds, and does nothing
        // without a detector configured (its default). ImageKit has no eye detector: it does the
        // same nothing rather than redden or grey whatever is red.
        "redeye": .init(0...0) { _, _ in },
        // Read with the source: an inner thumbor URL's crop becomes the focal region.
        "extract_focal": .init(0...0) { _, operations in operations.extractsFocal = true },
        "frame": .init(1...1) { arguments, operations throws(ImageServiceError) in
            guard !arguments[0].isEmpty else {
                throw ImageServiceError(.invalidFilterArgument, "frame: the picture's URL is empty")
            }
            operations.filters.append(.frame(url: arguments[0]))
        },
        "equalize": .init(0...0) { _, operations in operations.filters.append(.equalize) },
        "curve": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.filters.append(try curve(arguments.values))
        },
        "max_bytes": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.maxBytes = try arguments.int(0, in: 1...(1 << 30))
        },
        "max_age": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.maxAge = try arguments.int(0, in: 0...(10 * 365 * 86_400))
        },
        "watermark": .init(4...6, readWatermark),
        // ImageKit's: per-image quality, with imgproxy's autoquality arguments.
        "autoquality": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.autoQuality = try ImageOperations.AutoQualityRequest(
                arguments: arguments.values, option: arguments.filter)
        },
        // ImageKit's: `/meta/`'s placeholders and colours, with imgproxy's `/info` names.
        "blurhash": .init(2...2) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.blurHashX = try arguments.int(0, in: 1...9)
            operations.infoFacts.blurHashY = try arguments.int(1, in: 1...9)
        },
        "thumb_hash": .init(0...0) { _, operations in operations.infoFacts.thumbHash = true },
        "average": .init(0...1) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.average = true
            operations.infoFacts.averageIgnoresTransparent = try arguments.bool(0, absent: true)
        },
        "palette": .init(1...1) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.paletteColors = try arguments.int(0, in: 2...256)
        },
        "perceptual_hash": .init(0...0) { _, operations in operations.infoFacts.perceptualHash = true },
        "dominant_colors": .init(0...1) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.dominantColors = true
            operations.infoFacts.buildsMissedColors = try arguments.bool(0)
        },
        "calc_hashsums": .init(nil) { arguments, operations throws(ImageServiceError) in
            operations.infoFacts.hashsums = try ImgproxyURL.hashsums(arguments.values, arguments.filter)
        },
    ]

    static func readFormat(_ arguments: FilterArguments, _ operations: inout ImageOperations) throws(ImageServiceError)
    {
        let asked = arguments[0].lowercased()
        if asked == "best" {  // ImageKit's extension: the smallest the client accepts
            (operations.format, operations.bestFormat) = (nil, true)
            return
        }
        let value = asked == "jpg" ? "jpeg" : asked == "heif" ? "heic" : asked
        guard let format = ImageOperations.Format(rawValue: value), format.capabilities.isOutput else {
            throw ImageServiceError(
                .invalidFilterArgument,
                "format: '\(arguments[0])' is not \(ImageOperations.Format.outputNames) (jpg and heif too)")
        }
        operations.format = format
    }

    /// `round_corner(a|b,r,g,b[,transparent])`.
    static func readRoundCorner(_ arguments: FilterArguments, _ operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        let radii = arguments[0].split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard radii.count <= 2 else { throw ImageServiceError(.invalidFilterArgument, "round_corner: 'a|b' at most") }
        let a = try arguments.int(radii[0], in: 0...10_000)
        let b = radii.count > 1 ? try arguments.int(radii[1], in: 0...10_000) : a
        let color = ImageOperations.Color(
            red: UInt8(try arguments.int(1, in: 0...255)), green: UInt8(try arguments.int(2, in: 0...255)),
            blue: UInt8(try arguments.int(3, in: 0...255)))
        operations.filters.append(.roundCorner(a: a, b: b, color: color, transparent: try arguments.bool(4)))
    }

    /// `focal(AxB:CxD)`; thumbor ignores a `focal()` without a region.
    static func readFocal(_ arguments: FilterArguments, _ operations: inout ImageOperations) throws(ImageServiceError) {
        if arguments.isEmpty || arguments.values == [""] { return }
        try arguments.expect(1...1)
        guard case .region(let left, let top, let right, let bottom)? = parseCrop(arguments[0]), right > left,
            bottom > top
        else {
            throw ImageServiceError(.invalidFilterArgument, "focal: '\(arguments[0])' is not AxB:CxD")
        }
        operations.gravity = .focalRegion(left: left, top: top, right: right, bottom: bottom)
    }

    /// thumbor-video-engine's `still([position])`: a still of an animation or video, at seconds or
    /// [HH:]MM:SS[.fraction] (the first frame without one).
    static func readStill(_ arguments: FilterArguments, _ operations: inout ImageOperations) throws(ImageServiceError) {
        operations.still = true
        guard let position = arguments.values.first, !position.isEmpty else {
            operations.videoTime = 0
            return
        }
        guard let seconds = Self.position(position) else {
            throw ImageServiceError(
                .invalidFilterArgument, "still: '\(position)' is not seconds or [HH:]MM:SS[.fraction]")
        }
        operations.videoTime = seconds
    }

    /// `watermark(url,x,y,alpha[,w_ratio[,h_ratio]])`; the position is read here, so that a bad
    /// one is a 400 before anything is fetched.
    static func readWatermark(_ arguments: FilterArguments, _ operations: inout ImageOperations)
        throws(ImageServiceError)
    {
        operations.filters.append(
            .watermark(
                url: arguments[0], x: try ImageOperations.WatermarkPosition(arguments[1]),
                y: try ImageOperations.WatermarkPosition(arguments[2]), alpha: try arguments.int(3, in: 0...100),
                widthRatio: try arguments.optionalDouble(4, in: 0...100),
                heightRatio: try arguments.optionalDouble(5, in: 0...100)))
    }
}
