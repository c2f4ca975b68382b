import Foundation

extension ImgproxyURL {
    /// The path (after the signature) of `operations` and `source` in this grammar, with a
    /// plain percent-encoded source: parsing it gives the same operations back.
    public static func path(for operations: ImageOperations, source: URL) -> String {
        let options =
            geometryOptions(operations) + operations.filters.compactMap(filterOption) + outputOptions(operations)
            + factOptions(operations.infoFacts)
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "@?#%")
        let encodedSource =
            source.absoluteString.addingPercentEncoding(withAllowedCharacters: allowed) ?? source.absoluteString
        let extensionPart = operations.format.map { "@" + $0.rawValue } ?? (operations.bestFormat ? "@best" : "")
        return "/" + (options + ["plain", encodedSource]).joined(separator: "/") + extensionPart
    }

    /// Size, gravity, crop, trim, padding, turns and background.
    static func geometryOptions(_ operations: ImageOperations) -> [String] {
        var options: [String] = []
        let number = ImageOperations.number
        if operations.resizeMode == .cover {
            options.append("rt:fill")
        } else if operations.resizeMode != .fit {
            options.append("rt:\(operations.resizeMode.rawValue)")
        }
        if operations.width != 0 { options.append("w:\(operations.width)") }
        if operations.height != 0 { options.append("h:\(operations.height)") }
        if operations.enlarge { options.append("el:1") }
        if operations.extend { options.append("ex:1") }
        if operations.minWidth != 0 { options.append("mw:\(operations.minWidth)") }
        if operations.minHeight != 0 { options.append("mh:\(operations.minHeight)") }
        if operations.zoomX != 1 || operations.zoomY != 1 {
            options.append("z:\(number(operations.zoomX)):\(number(operations.zoomY))")
        }
        if operations.dpr != 1 { options.append("dpr:\(number(operations.dpr))") }
        if operations.gravity != .center {
            options.append("g:" + ImageOperations.describe(operations.gravity).replacingOccurrences(of: ",", with: ":"))
        }
        if case .size(let width, let height, let gravity)? = operations.crop {
            options.append(
                "c:\(number(width)):\(number(height))"
                    + (gravity.map { ":" + ImageOperations.describe($0).replacingOccurrences(of: ",", with: ":") } ?? "")
            )
        }
        if let trim = operations.trim { options.append("t:\(number(trim.tolerance))") }
        if let padding = operations.padding { options.append("pd:" + padding.map(String.init).joined(separator: ":")) }
        if !operations.autoRotate { options.append("ar:0") }
        if operations.rotate != 0 { options.append("rot:\(operations.rotate)") }
        if operations.flipHorizontal || operations.flipVertical {
            options.append("fl:\(operations.flipHorizontal ? 1 : 0):\(operations.flipVertical ? 1 : 0)")
        }
        if let background = operations.background { options.append("bg:\(background.urlHex)") }
        return options
    }

    /// A pixel filter as imgproxy spells it; nil for one its grammar cannot say.
    static func filterOption(_ filter: ImageOperations.Filter) -> String? {
        let number = ImageOperations.number
        switch filter {
        case .blur(_, let sigma?): return "bl:\(number(sigma))"
        // imgproxy's sharpen has strength 1: another strength has no spelling here.
        case .sharpen(1, let sigma, _): return "sh:\(number(sigma))"
        case .pixelate(let size): return "pix:\(size)"
        default: return nil
        }
    }

    /// Quality, format-specific options, metadata, the response's headers and the video options.
    static func outputOptions(_ operations: ImageOperations) -> [String] {
        var options: [String] = []
        if let quality = operations.quality { options.append("q:\(quality)") }
        if !operations.formatQuality.isEmpty {
            options.append(
                "fq:"
                    + operations.formatQuality.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                        "\($0.key.rawValue):\($0.value)"
                    }.joined(separator: ":"))
        }
        if let maxBytes = operations.maxBytes { options.append("mb:\(maxBytes)") }
        if let autoQuality = operations.autoQuality {
            options.append((["aq"] + autoQuality.arguments).joined(separator: ":"))
        }
        if !operations.stripMetadata { options.append("sm:0") }
        if operations.stripColorProfile { options.append("scp:1") }
        if operations.keepCopyright { options.append("kcr:1") }
        if let cacheBuster = operations.cacheBuster { options.append("cb:\(cacheBuster)") }
        if let expires = operations.expires { options.append("exp:\(expires)") }
        if let filename = operations.filename {
            options.append("fn:" + Base64URL.encode(Data(filename.utf8), padded: false) + ":1")
        }
        if operations.returnAttachment { options.append("att:1") }
        if let videoTime = operations.videoTime { options.append("vts:\(ImageOperations.number(videoTime))") }
        if operations.videoKeyframes { options.append("vtk:1") }
        if let stills = operations.videoStills { options.append(videoStillsOption(stills)) }
        return options
    }

    /// `/info`'s placeholders and colours.
    static func factOptions(_ facts: ImageOperations.InfoFacts) -> [String] {
        var options: [String] = []
        if facts.blurHashX > 0 { options.append("bh:\(facts.blurHashX):\(facts.blurHashY)") }
        if facts.thumbHash { options.append("th:1") }
        if facts.average { options.append(facts.averageIgnoresTransparent ? "avg:1" : "avg:1:0") }
        if facts.paletteColors > 0 { options.append("p:\(facts.paletteColors)") }
        if facts.perceptualHash { options.append("ph:1") }
        if facts.dominantColors { options.append(facts.buildsMissedColors ? "dc:1:1" : "dc:1") }
        if !facts.hashsums.isEmpty { options.append((["chs"] + facts.hashsums.map(\.rawValue)).joined(separator: ":")) }
        return options
    }

    /// `vtt:…` or `vta:…` with every argument written out.
    static func videoStillsOption(_ stills: ImageOperations.VideoStills) -> String {
        let number = ImageOperations.number
        let head: String
        switch stills.layout {
        case .sprite(let columns, let rows): head = "vtt:\(number(stills.step)):\(columns):\(rows)"
        case .animation(let frames, let delay): head = "vta:\(number(stills.step)):\(delay):\(frames)"
        }
        let flags = [stills.extend, stills.trim, stills.fill].map { $0 ? "1" : "0" }.joined(separator: ":")
        return head + ":\(stills.width):\(stills.height):" + flags
            + ":\(number(stills.focusX)):\(number(stills.focusY))"
    }
}
