import Foundation
import ImageKit

/// An encoded result of the pipeline.
public struct ProcessedImage: Sendable {
    /// The encoded answer.
    public var data: Data
    /// Its format.
    public var format: ImageOperations.Format
    /// Its width in pixels (0 when read back from the result cache's disk).
    public var width: Int
    /// Its height in pixels (0 when read back from the result cache's disk).
    public var height: Int
    /// Its frames (an animation keeps all of them).
    public var frameCount: Int
    /// Where the time went (zero when read back from the result cache).
    public var timings = ProcessingTimings()
}

/// The CPU stages of one ``ImageProcessor/process(_:request:watermarks:)``, for the service's stage metrics.
public struct ProcessingTimings: Sendable {
    /// Decoding, including decode-time scaling.
    public var decode: Duration = .zero
    /// Everything between decode and encode: crop, resample, canvas, turns, filters.
    public var transform: Duration = .zero
    /// Encoding.
    public var encode: Duration = .zero

    /// All zero.
    public init() {}

    /// The three stages' durations.
    public init(decode: Duration, transform: Duration, encode: Duration) {
        self.decode = decode
        self.transform = transform
        self.encode = encode
    }
}

/// Adds up decode and encode time across one run of the pipeline (it may decode twice).
private final class StageClock {
    var decode: Duration = .zero
    var encode: Duration = .zero
    let start = ContinuousClock.now
}

/// Turns a source's bytes and a request into the answer's bytes: probe the header, plan the
/// geometry (``GeometryPlan``), decode at the smallest size that still serves the plan (a
/// decode-time thumbnail: DCT scaling for JPEG, scaled WebP decodes …), crop, resample exactly to
/// the plan, canvas, turns and filters, then encode. Synchronous and CPU-bound: the service runs
/// it on its worker pool.
///
/// ```swift
/// let request = try ImageRequest.parse(path: "/unsafe/fit-in/256x256/example.com/cat.jpg")
/// let result = try ImageProcessor().process(sourceBytes, request: request)
/// result.format   // .jpeg
/// ```
public struct ImageProcessor: Sendable {
    /// The decoders and encoders used.
    public var coders: ImageCodersManager
    /// Pixels a source may have (decompression bombs beyond): 50 M, imgproxy's default.
    public var maxPixels: Int
    /// The quality when none is asked (thumbor's 80).
    public var defaultQuality: Int

    /// A processor; every parameter has the default documented on its property.
    public init(coders: ImageCodersManager = .shared, maxPixels: Int = 50_000_000, defaultQuality: Int = 80) {
        self.coders = coders
        self.maxPixels = maxPixels
        self.defaultQuality = defaultQuality
    }

    /// - Throws: ``ImageServiceError``: 415 for bytes that are no image this build reads, 422 for a
    ///   source over ``maxPixels``, 400 for a bad argument (a watermark position), 500 otherwise.
    ///
    /// - Parameter watermarks: the bytes of each `watermark()` filter's image, by the URL as the
    ///
    /// - Parameters:
    ///   - data: the source image's bytes.
    ///   - originalRequest: the request as it came, for the formats and sizes negotiated with it.
    ///   filter names it (the service fetches them through the same rules as the source).
    public func process(
        _ data: Data, request originalRequest: ImageRequest,
        watermarks: [String: Data] = [:]
    ) throws(ImageServiceError) -> ProcessedImage {
        let clock = StageClock()
        var result = try process(data, request: originalRequest, watermarks: watermarks, clock: clock)
        let total = ContinuousClock.now - clock.start
        result.timings = ProcessingTimings(
            decode: clock.decode, transform: max(.zero, total - clock.decode - clock.encode),
            encode: clock.encode)
        return result
    }

    private func process(
        _ data: Data, request originalRequest: ImageRequest, watermarks: [String: Data],
        clock: StageClock
    ) throws(ImageServiceError) -> ProcessedImage {
        var request = originalRequest
        var operations = request.operations
        let signature = ImageSignature(data)
        guard signature.format != .unknown else {
            throw ImageServiceError(415, code: "notAnImage", "the source is not an image")
        }
        var decoding = ImageDecodingOptions.default
        decoding.appliesOrientation = operations.autoRotate
        decoding.limits.maxPixelsPerFrame = maxPixels
        decoding.decodesFramesLazily = false
        // An animation asked as a still format (JPEG, HEIC, JPEG XL) answers its first frame:
        // only that frame is decoded, not every frame to keep one. (A GIF under rules that skip
        // its filters stays a GIF whatever is asked.)
        let keepsGIF = operations.rules.skipsFiltersOnGIF && signature.format == .gif
        let stillOutput = !keepsGIF && operations.format.map { ![.gif, .webp, .avif, .png].contains($0) } == true
        if stillOutput { decoding.firstFrameOnly = true }

        // The source's displayed size: from the header when it can be read, else from a decode.
        var fullDecode: DecodedImage?
        let sourceWidth: Int, sourceHeight: Int
        if let trim = operations.trim {
            // Trim needs the pixels: the whole image is decoded, and the trimmed image stands in
            // for the source (a manual crop moves with it, as thumbor moves it).
            var decoded = try decode(data, decoding, clock)
            if let box = Self.trimBox(decoded.frames[0].bitmap, trim: trim) {
                do {
                    decoded = try decoded.mappingFrames { (bitmap: Bitmap) throws(ImageError) -> Bitmap in
                        try bitmap.cropped(to: box)
                    }
                } catch {
                    throw Self.serviceError(error)
                }
                if case .region(let left, let top, let right, let bottom)? = operations.crop {
                    operations.crop = .region(
                        left: left - box.x, top: top - box.y, right: right - box.x, bottom: bottom - box.y)
                }
            }
            operations.trim = nil
            request.operations = operations
            fullDecode = decoded
            sourceWidth = decoded.width
            sourceHeight = decoded.height
        } else if let probe = ImageProbe(data) {
            guard probe.width <= 100_000, probe.height <= 100_000, probe.width * probe.height <= maxPixels else {
                throw ImageServiceError(
                    422, code: "tooManyPixels",
                    "the source has \(probe.width)x\(probe.height) pixels, over \(maxPixels)")
            }
            let swaps = operations.autoRotate && probe.orientation.swapsDimensions
            sourceWidth = swaps ? probe.height : probe.width
            sourceHeight = swaps ? probe.width : probe.height
        } else {
            let decoded = try decode(data, decoding, clock)
            fullDecode = decoded
            sourceWidth = decoded.width
            sourceHeight = decoded.height
        }
        // A GIF has no decode-time scaling: decoded once, whole, which also tells its frame count.
        if signature.format == .gif, fullDecode == nil { fullDecode = try decode(data, decoding, clock) }
        let animated = !stillOutput && (signature.isAnimated || (fullDecode?.frameCount ?? 1) > 1)
        let skipsFilters = keepsGIF
        let vector = signature.format == .svg || signature.format == .pdf
        let plan = GeometryPlan(
            sourceWidth: sourceWidth, sourceHeight: sourceHeight, sourceIsGIF: skipsFilters, sourceIsVector: vector,
            request: request)

        // The region of the source that ends up in the picture, and its scale.
        var region = GeometryPlan.Rect(x: 0, y: 0, width: sourceWidth, height: sourceHeight)
        if let crop = plan.manualCrop { region = crop }
        let cropBounds = region
        if var fill = plan.fillCrop {
            Self.place(&fill, in: region.width, region.height, gravity: operations.gravity, manualCrop: plan.manualCrop)
            region = GeometryPlan.Rect(
                x: region.x + fill.x, y: region.y + fill.y, width: fill.width, height: fill.height)
        }
        let targetWidth = plan.scaledWidth ?? region.width, targetHeight = plan.scaledHeight ?? region.height
        let scale = min(Double(targetWidth) / Double(region.width), Double(targetHeight) / Double(region.height))

        // Decode at the smallest size that still has every pixel the plan needs.
        let decoded: DecodedImage
        if let fullDecode {
            decoded = fullDecode
        } else if scale < 1 || (vector && scale != 1), !animated {
            // A vector is drawn at the size the plan needs, larger or smaller than its own.
            var scaled = decoding
            if region.width == sourceWidth && region.height == sourceHeight {
                // No crop: the decoder makes the plan's exact size itself, one resample in all.
                scaled.thumbnailPixelSize = PixelSize(width: targetWidth, height: targetHeight)
                scaled.preservesAspectRatio = false
            } else {
                scaled.thumbnailPixelSize = PixelSize(
                    width: max(1, Int((Double(sourceWidth) * scale).rounded(.up))),
                    height: max(1, Int((Double(sourceHeight) * scale).rounded(.up))))
            }
            decoded = try decode(data, scaled, clock)
        } else {
            decoded = try decode(data, decoding, clock)
        }

        let factorX = Double(decoded.width) / Double(sourceWidth),
            factorY = Double(decoded.height) / Double(sourceHeight)
        var decodedRegion = PixelRect(
            x: Int((Double(region.x) * factorX).rounded()), y: Int((Double(region.y) * factorY).rounded()),
            width: max(1, Int((Double(region.width) * factorX).rounded())),
            height: max(1, Int((Double(region.height) * factorY).rounded())))
        if operations.gravity == .smart, plan.fillCrop != nil, !animated {
            // The window's place comes from the pixels: scored on the decode-time thumbnail.
            let bounds = PixelRect(
                x: Int((Double(cropBounds.x) * factorX).rounded()), y: Int((Double(cropBounds.y) * factorY).rounded()),
                width: Int((Double(cropBounds.width) * factorX).rounded()),
                height: Int((Double(cropBounds.height) * factorY).rounded())
            )
            .intersection(PixelRect(x: 0, y: 0, width: decoded.width, height: decoded.height))
            if !bounds.isEmpty {
                decodedRegion = SmartCrop.window(
                    of: (decodedRegion.width, decodedRegion.height), within: bounds, in: decoded.frames[0].bitmap)
            }
        }
        let image: DecodedImage
        do {
            image = try decoded.mappingFrames { (bitmap: Bitmap) throws(ImageError) -> Bitmap in
                var bitmap = bitmap
                let bounded = decodedRegion.intersection(
                    PixelRect(x: 0, y: 0, width: bitmap.width, height: bitmap.height))
                if bounded.width != bitmap.width || bounded.height != bitmap.height {
                    bitmap = try bitmap.cropped(to: bounded)
                }
                if bitmap.width != targetWidth || bitmap.height != targetHeight {
                    bitmap = try bitmap.resized(to: PixelSize(width: targetWidth, height: targetHeight))
                }
                return try finish(
                    bitmap, plan: plan, operations: operations, appliesFilters: !skipsFilters, watermarks: watermarks)
            }
        } catch {
            throw Self.serviceError(error)
        }
        // thumbor's format() is one of the filters it skips for a GIF source: GIF stays GIF.
        let format = operations.outputFormat(
            sourceFormat: Self.format(of: signature.format), keepsGIF: skipsFilters, hasAlpha: !image.isOpaque)
        return try encode(image, as: format, operations: operations, clock)
    }

    private func decode(_ data: Data, _ options: ImageDecodingOptions, _ clock: StageClock) throws(ImageServiceError)
        -> DecodedImage
    {
        let start = ContinuousClock.now
        defer { clock.decode += ContinuousClock.now - start }
        do {
            return try coders.decode(data, options: options)
        } catch {
            throw Self.serviceError(error)
        }
    }

    /// Canvas, proportion, flips, turns and pixel filters, after the resample.
    private func finish(
        _ input: Bitmap, plan: GeometryPlan, operations: ImageOperations, appliesFilters: Bool,
        watermarks: [String: Data]
    ) throws(ImageError) -> Bitmap {
        var bitmap = input
        if let canvasWidth = plan.canvasWidth, let canvasHeight = plan.canvasHeight {
            var fill = operations.fill
            if case .auto? = fill { fill = .color(Self.medianColor(bitmap)) }
            bitmap = try Self.canvas(
                bitmap, width: canvasWidth, height: canvasHeight, fill: fill, background: operations.background)
        }
        if let proportion = plan.finalScale {
            bitmap = try bitmap.resized(
                to: PixelSize(
                    width: max(1, Int(Double(bitmap.width) * proportion)),
                    height: max(1, Int(Double(bitmap.height) * proportion))))
        }
        if let padding = plan.padding {
            bitmap = try bitmap.padded(
                top: padding[0], right: padding[1], bottom: padding[2], left: padding[3],
                color: operations.background ?? .clear)
        }
        if plan.flipHorizontal || plan.flipVertical {
            bitmap = try bitmap.flipped(horizontally: plan.flipHorizontal, vertically: plan.flipVertical)
        }
        if plan.rotation != 0 { bitmap = try bitmap.rotated(quarterTurns: -plan.rotation) }  // the plan turns clockwise
        // thumbor runs no post-resize filter on a GIF source (see GeometryPlan's sourceIsGIF).
        for filter in operations.filters where appliesFilters {
            switch filter {
            case .blur(let radius, let sigma):
                let value = min(Bitmap.maximumBlurSigma, sigma ?? radius)
                if value > 0 { bitmap = try bitmap.blurred(sigma: value) }
            case .grayscale:
                bitmap = try bitmap.grayscaled()
            case .equalize:
                let tables = Self.equalizingTables(bitmap)
                bitmap = try bitmap.mappingColors { (tables[0][$0], tables[1][$1], tables[2][$2]) }
            case .curve(let all, let red, let green, let blue):
                let common = Self.splineTable(all), r = Self.splineTable(red), g = Self.splineTable(green),
                    b = Self.splineTable(blue)
                bitmap = try bitmap.mappingColors { (common[r[$0]], common[g[$1]], common[b[$2]]) }
            case .brightness(let amount):
                let delta = 255 * amount / 100  // C's truncating division, as thumbor's filter
                bitmap = try bitmap.mappingColors { ($0 + delta, $1 + delta, $2 + delta) }
            case .rgb(let red, let green, let blue):
                let (dr, dg, db) = (255 * red / 100, 255 * green / 100, 255 * blue / 100)
                bitmap = try bitmap.mappingColors { ($0 + dr, $1 + dg, $2 + db) }
            case .contrast(let amount):
                let factor = (amount + 100) * (amount + 100) / 100
                bitmap = try bitmap.mappingColors {
                    (factor * ($0 - 128) / 100 + 128, factor * ($1 - 128) / 100 + 128, factor * ($2 - 128) / 100 + 128)
                }
            case .saturation(let change):
                let amount = Float(change)
                bitmap = try bitmap.mappingColors { red, green, blue in
                    // thumbor's: the perceived brightness p, each channel moved from p by `change` (floats, truncated).
                    let (r, g, b) = (Float(red), Float(green), Float(blue))
                    let p = (r * r * 0.299 + g * g * 0.587 + b * b * 0.114).squareRoot()
                    return (Int(p + (r - p) * amount), Int(p + (g - p) * amount), Int(p + (b - p) * amount))
                }
            case .roundCorner(let a, _, let color, let transparent):
                bitmap = try bitmap.roundingCorners(radius: Double(a))
                if !transparent { bitmap = try bitmap.flattened(onto: color) }
            case .sharpen(let amount, let radius, let luminanceOnly):
                // thumbor: an unsharp mask of `amount` over a Gaussian of `radius`; imgproxy
                // (radius 0): `amount` is the Gaussian's sigma at strength 1.
                let (strength, sigma) = radius > 0 ? (amount, radius) : (1, amount)
                if strength > 0, sigma > 0 {
                    bitmap = try bitmap.sharpened(
                        strength: strength, sigma: min(Bitmap.maximumBlurSigma, sigma), luminanceOnly: luminanceOnly)
                }
            case .pixelate(let size):
                if size > 1 { bitmap = try bitmap.pixelated(blockSize: size) }
            case .noise(let amount):
                // thumbor's noise: each channel moved by a random amount in ±`amount`; the
                // generator is seeded with the image's size so one URL always gives the same bytes.
                guard amount > 0 else { continue }
                var state =
                    UInt64(bitmap.width) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(bitmap.height) &+ 0xD1B5_4A32_D192_ED03
                func next() -> Int {
                    state ^= state << 13
                    state ^= state >> 7
                    state ^= state << 17
                    return Int(state % UInt64(2 * amount + 1)) - amount
                }
                bitmap = try bitmap.mappingColors { ($0 + next(), $1 + next(), $2 + next()) }
            case .frame(let url):
                guard let patch = watermarks[url] else {
                    throw ImageError(.invalidArgument, "the frame's picture was not given")
                }
                bitmap = try NinePatchFrame.apply(bitmap, patchBytes: patch, coders: coders, maxPixels: maxPixels)
            case .watermark(let url, let x, let y, let alpha, let widthRatio, let heightRatio):
                guard let mark = watermarks[url] else {
                    throw ImageError(.invalidArgument, "the watermark's image was not given")
                }
                bitmap = try Watermark.apply(
                    bitmap, markBytes: mark, x: x, y: y, alpha: alpha, widthRatio: widthRatio,
                    heightRatio: heightRatio, coders: coders, maxPixels: maxPixels)
            }
        }
        if appliesFilters, let background = operations.background, !bitmap.isOpaque {
            bitmap = try bitmap.flattened(onto: background)
        }
        return bitmap
    }

    private func encode(
        _ image: DecodedImage, as format: ImageOperations.Format, operations: ImageOperations,
        _ clock: StageClock
    ) throws(ImageServiceError) -> ProcessedImage {
        let start = ContinuousClock.now
        defer { clock.encode += ContinuousClock.now - start }
        let quality = operations.formatQuality[format] ?? operations.quality ?? defaultQuality
        var options = ImageEncodingOptions(quality: Double(min(max(quality, 1), 100)) / 100)
        options.maxFileSize = operations.maxBytes
        let target: ImageFormat
        switch format {
        case .jpeg: target = .jpeg
        case .png: target = .png
        case .webp: target = .webp
        case .gif: target = .gif
        case .avif where ImageFormat.avif.isCodecSupported: target = .avif
        case .heic where ImageFormat.heic.isCodecSupported: target = .heic
        case .jxl where ImageFormat.jpegXL.isCodecSupported: target = .jpegXL
        default:
            throw ImageServiceError(
                415, code: "unsupportedOutputFormat", "\(format.rawValue) output is not supported by this build")
        }
        do {
            let data = try coders.encode(image, as: target, options: options)
            return ProcessedImage(
                data: data, format: format, width: image.width, height: image.height, frameCount: image.frameCount)
        } catch {
            throw Self.serviceError(error)
        }
    }

    // MARK: Pieces

    /// The facts `/meta/` (thumbor) and `/info/` (imgproxy) answer: the source's format, size,
    /// orientation and frames, and the size the operations would give, read from the header
    /// where it can be (nothing is decoded then) — as JSON.
    public func metadata(_ data: Data, request: ImageRequest) throws(ImageServiceError) -> Data {
        let signature = ImageSignature(data)
        guard signature.format != .unknown else {
            throw ImageServiceError(415, code: "notAnImage", "the source is not an image")
        }
        var width: Int, height: Int, orientation = 1, frames = 1
        if let probe = ImageProbe(data), request.operations.trim == nil {
            guard probe.width * probe.height <= maxPixels else {
                throw ImageServiceError(
                    422, code: "tooManyPixels",
                    "the source has \(probe.width)x\(probe.height) pixels, over \(maxPixels)")
            }
            let swaps = request.operations.autoRotate && probe.orientation.swapsDimensions
            (width, height) = swaps ? (probe.height, probe.width) : (probe.width, probe.height)
            orientation = probe.orientation.rawValue
            if signature.format == .gif || signature.isAnimated {
                frames =
                    (try? coders.decode(data, options: ImageDecodingOptions(decodesFramesLazily: true)).frameCount) ?? 1
            }
        } else {
            var options = ImageDecodingOptions.default
            options.limits.maxPixelsPerFrame = maxPixels
            options.decodesFramesLazily = true
            let decoded: DecodedImage
            do { decoded = try coders.decode(data, options: options) } catch { throw Self.serviceError(error) }
            (width, height, frames) = (decoded.width, decoded.height, decoded.frameCount)
            orientation = decoded.orientation.rawValue
        }
        let plan = GeometryPlan(
            sourceWidth: width, sourceHeight: height,
            sourceIsGIF: signature.format == .gif,
            request: request)
        let object: [String: Any] = [
            "source": [
                "url": request.source.absoluteString,
                "format": Self.format(of: signature.format)?.rawValue ?? "\(signature.format)",
                "width": width, "height": height, "orientation": orientation, "frameCount": frames,
            ],
            "target": ["width": plan.outputWidth, "height": plan.outputHeight],
            "operations": request.operations.canonicalKey,
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// thumbor's trim box: the pixels farther than the tolerance (Euclidean distance over RGB, or
    /// RGBA for an image with alpha) from the reference corner's colour, scanned as thumbor scans;
    /// nil when nothing would be left (thumbor then ignores the trim).
    static func trimBox(_ bitmap: Bitmap, trim: ImageOperations.Trim) -> PixelRect? {
        let width = bitmap.width, height = bitmap.height
        let channels = bitmap.isOpaque ? 3 : 4
        var reference = [UInt8](repeating: 0, count: 4)
        let (referenceX, referenceY) = trim.reference == .topLeft ? (0, 0) : (width - 1, height - 1)
        bitmap.withRow(referenceY) { row in for channel in 0..<4 { reference[channel] = row[referenceX * 4 + channel] }
        }
        let limit = trim.tolerance * trim.tolerance
        var left = width, top = height, right = 0, bottom = 0
        for y in 0..<height {
            bitmap.withRow(y) { row in
                func far(_ x: Int) -> Bool {
                    var sum = 0
                    for channel in 0..<channels {
                        let difference = Int(row[x * 4 + channel]) - Int(reference[channel])
                        sum += difference * difference
                    }
                    return Double(sum) > limit
                }
                var x = 0
                while x < width {
                    if far(x) {
                        left = min(left, x)
                        top = min(top, y)
                        bottom = y
                        break
                    }
                    x += 1
                }
                var scan = width - 1
                let stop = max(x, right)
                while scan > stop {
                    if far(scan) {
                        right = max(right, scan)
                        break
                    }
                    scan -= 1
                }
            }
        }
        guard right >= left, bottom >= top else { return nil }
        return PixelRect(x: left, y: top, width: right + 1 - left, height: bottom + 1 - top)
    }

    /// Moves a fill crop to the gravity (thumbor: the alignment's focal point, floor-averaged;
    /// a focal region's centre; smart: the centre, as thumbor without detectors).
    static func place(
        _ crop: inout GeometryPlan.Rect, in width: Int, _ height: Int, gravity: ImageOperations.Gravity,
        manualCrop: GeometryPlan.Rect?
    ) {
        var focusX: Double?, focusY: Double?
        switch gravity {
        case .west, .northWest, .southWest: focusX = 0
        case .east, .northEast, .southEast: focusX = Double(width)
        default: break
        }
        switch gravity {
        case .north, .northWest, .northEast: focusY = 0
        case .south, .southWest, .southEast: focusY = Double(height)
        default: break
        }
        if case .focalPoint(let x, let y) = gravity {
            focusX = x * Double(width)
            focusY = y * Double(height)
        }
        if case .focalRegion(let left, let top, let right, let bottom) = gravity {
            focusX = Double(left + right) / 2 - Double(manualCrop?.x ?? 0)
            focusY = Double(top + bottom) / 2 - Double(manualCrop?.y ?? 0)
        }
        if let focusX {
            crop.x = Int(
                GeometryPlan.pythonRound(
                    min(max(focusX.rounded(.down) - Double(crop.width) / 2, 0), Double(width - crop.width))))
        }
        if let focusY {
            crop.y = Int(
                GeometryPlan.pythonRound(
                    min(max(focusY.rounded(.down) - Double(crop.height) / 2, 0), Double(height - crop.height))))
        }
    }

    /// A canvas of `width`×`height` in the fill colour (or the image blurred), the image centred.
    static func canvas(
        _ bitmap: Bitmap, width: Int, height: Int, fill: ImageOperations.Fill?,
        background: ImageOperations.Color?
    ) throws(ImageError) -> Bitmap {
        let buffer = try PixelBuffer(width: width, height: height)
        var base: Bitmap?
        switch fill {
        case .blur?:
            base = try bitmap.blurred(sigma: 25).resized(to: PixelSize(width: width, height: height))
        case .color(let color)?:
            buffer.fill(with: color)
        default:
            buffer.fill(with: background ?? .clear)
        }
        if let base { buffer.draw(base, x: 0, y: 0) }
        buffer.draw(bitmap, x: (width - bitmap.width) / 2, y: (height - bitmap.height) / 2)
        return buffer.freezeCheckingOpacity()
    }

    /// thumbor's `fill(auto)` colour: the median of each channel over the image's pixels.
    static func medianColor(_ bitmap: Bitmap) -> ImageOperations.Color {
        let histograms = bitmap.channelHistograms()
        let half = (bitmap.width * bitmap.height + 1) / 2
        let medians = histograms.map { histogram -> UInt8 in
            var seen = 0
            for (value, count) in histogram.enumerated() {
                seen += count
                if seen >= half { return UInt8(value) }
            }
            return 255
        }
        return ImageOperations.Color(red: medians[0], green: medians[1], blue: medians[2])
    }

    /// Per channel, each value's place in the cumulative histogram stretched to 0…255 (the
    /// darkest value present becomes 0, the brightest 255); a channel of one value stays.
    static func equalizingTables(_ bitmap: Bitmap) -> [[Int]] {
        let histograms = bitmap.channelHistograms()
        return histograms.map { histogram in
            var cumulative = [Int](repeating: 0, count: 256)
            var total = 0
            for value in 0..<256 {
                total += histogram[value]
                cumulative[value] = total
            }
            let lowest = cumulative.first { $0 > 0 } ?? 0
            guard total > lowest else { return Array(0..<256) }
            return cumulative.map { max(0, Int((Double($0 - lowest) * 255 / Double(total - lowest)).rounded())) }
        }
    }

    /// A 256-entry table through control points `[x0, y0, x1, y1, …]` (x rising): a natural
    /// cubic spline between them, the first y before the first x, the last y from the last x.
    static func splineTable(_ points: [Int]) -> [Int] {
        let xs = stride(from: 0, to: points.count, by: 2).map { Double(points[$0]) }
        let ys = stride(from: 1, to: points.count, by: 2).map { Double(points[$0]) }
        let n = xs.count
        var table = [Int](repeating: Int(ys[0]), count: 256)
        guard n > 1 else { return table }
        // Second derivatives of the natural spline (zero at both ends), by the tridiagonal sweep.
        var second = [Double](repeating: 0, count: n), upper = [Double](repeating: 0, count: n)
        for i in 1..<(n - 1) {
            let left = xs[i] - xs[i - 1], right = xs[i + 1] - xs[i]
            let slope = (ys[i + 1] - ys[i]) / right - (ys[i] - ys[i - 1]) / left
            let pivot = 2 * (left + right) - left * upper[i - 1]
            upper[i] = right / pivot
            second[i] = (6 * slope - left * second[i - 1]) / pivot
        }
        second[n - 1] = 0
        if n > 2 {
            for i in stride(from: n - 2, through: 1, by: -1) { second[i] -= upper[i] * second[i + 1] }
        }
        for i in 0..<(n - 1) {
            let h = xs[i + 1] - xs[i]
            for x in Int(xs[i])..<Int(xs[i + 1]) {
                let b = (Double(x) - xs[i]) / h, a = 1 - b
                let y =
                    a * ys[i] + b * ys[i + 1] + h * h / 6
                    * ((a * a * a - a) * second[i] + (b * b * b - b) * second[i + 1])
                table[x] = min(255, max(0, Int(y.rounded())))
            }
        }
        for x in Int(xs[n - 1])..<256 { table[x] = Int(ys[n - 1]) }
        return table
    }

    static func format(of format: ImageFormat) -> ImageOperations.Format? {
        switch format {
        case .jpeg: return .jpeg
        case .png: return .png
        case .webp: return .webp
        case .gif: return .gif
        case .avif: return .avif
        case .heic, .heif: return .heic
        case .jpegXL: return .jxl
        case .tiff: return .tiff
        case .bmp: return .bmp
        default: return nil
        }
    }

    /// ImageKit's errors as the service's statuses.
    static func serviceError(_ error: ImageError) -> ImageServiceError {
        switch error.code {
        case .decompressionBomb: return ImageServiceError(422, code: "tooManyPixels", error.message)
        case .truncatedData:
            return ImageServiceError(415, code: "truncatedImage", "the source image is cut short")
        case .badImageData, .zeroPixels:
            return ImageServiceError(415, code: "undecodableImage", "the source image is corrupt")
        case .unsupportedFormat, .emptyData:
            return ImageServiceError(415, code: "notAnImage", "the source is not an image this service reads")
        case .encrypted:
            return ImageServiceError(415, code: "encryptedSource", "the source document needs a password")
        case .invalidArgument: return ImageServiceError(400, code: "invalidArgument", error.message)
        default:
            return ImageServiceError(500, code: "processingFailed", "the image could not be processed (\(error.code))")
        }
    }
}
