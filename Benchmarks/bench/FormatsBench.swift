import CRawCodecs
import Foundation
import ImageKit

/// The photo formats: decode throughput of HEIC, AVIF, JPEG XL and TIFF against their C
/// libraries in the same run (BMP and ICO, parsed in Swift, have no C library to compare with),
/// the colour fast path against Little CMS, the cost of a profile on a thumbnail, and the AVIF
/// encoder against libavif straight. The files are made here from the synthetic photo.
struct FormatsBench {
    var options: BenchOptions
    var report: Report

    static let sizes = [("12mp", 4000, 3000), ("256", 256, 256)]
    static let formats = ["heic", "avif", "jxl", "tiff", "bmp"]

    func run() {
        decodeRows()
        colorRows()
        encodeRows()
        svgRows()
        hdrRows()
    }

    // MARK: - Decode

    private func makeFile(_ format: String, _ bitmap: Bitmap) -> Data? {
        let pixels = bitmap.packedRGBA()
        var output: UnsafeMutableRawPointer?
        func take(_ size: Int) -> Data? {
            defer { free(output) }
            guard size > 0, let output else { return nil }
            return Data(bytes: output, count: size)
        }
        switch format {
        case "heic": return take(ik_raw_heif_encode(pixels, Int32(bitmap.width), Int32(bitmap.height), 85, &output))
        case "jxl": return take(ik_raw_jxl_encode(pixels, Int32(bitmap.width), Int32(bitmap.height), 1.0, &output))
        case "tiff": return take(ik_raw_tiff_encode(pixels, Int32(bitmap.width), Int32(bitmap.height), &output))
        case "avif":
            return try? ImageCodersManager.shared.encode(
                DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png), as: .avif,
                options: ImageEncodingOptions(quality: 0.75, speed: 10))
        case "bmp": return Self.bmp(bitmap)
        default: return nil
        }
    }

    /// A bottom-up 24-bit BMP.
    static func bmp(_ bitmap: Bitmap) -> Data {
        let stride = (bitmap.width * 3 + 3) & ~3
        var data = Data(count: 54 + stride * bitmap.height)
        data.withUnsafeMutableBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            func put32(_ offset: Int, _ value: Int) {
                for i in 0..<4 { bytes[offset + i] = UInt8((value >> (8 * i)) & 0xFF) }
            }
            bytes[0] = 0x42; bytes[1] = 0x4D
            put32(2, 54 + stride * bitmap.height); put32(10, 54); put32(14, 40)
            put32(18, bitmap.width); put32(22, bitmap.height)
            bytes[26] = 1; bytes[28] = 24
            for y in 0..<bitmap.height {
                let pixel = bitmap.height - 1 - y
                bitmap.withRow(pixel) { row in
                    for x in 0..<bitmap.width {
                        let o = 54 + y * stride + x * 3
                        bytes[o] = row[x * 4 + 2]; bytes[o + 1] = row[x * 4 + 1]; bytes[o + 2] = row[x * 4]
                    }
                }
            }
        }
        return data
    }

    private func rawDecode(_ format: String, _ data: Data) -> Bool {
        var image = ik_raw_image()
        let status: Int32 = data.withUnsafeBytes { bytes in
            switch format {
            case "heic": ik_raw_heif_decode(bytes.baseAddress!, bytes.count, &image)
            case "avif": ik_raw_avif_decode(bytes.baseAddress!, bytes.count, &image)
            case "jxl": ik_raw_jxl_decode(bytes.baseAddress!, bytes.count, &image)
            case "tiff": ik_raw_tiff_decode(bytes.baseAddress!, bytes.count, &image)
            default: -1
            }
        }
        if status == 0 { ik_raw_image_free(&image) }
        return status == 0
    }

    private func decodeRows() {
        var rows: [[String]] = []
        let measurement = PairedMeasurement(minTime: options.minTime)
        for (label, width, height) in Self.sizes where !(options.quick && label == "12mp") {
            let names = Self.formats.map { "decode/\($0)-\(label)" }.filter(options.includes)
            guard !names.isEmpty else { continue }
            let photo = SyntheticImages.photo(width: width, height: height)
            for kind in Self.formats where options.includes("decode/\(kind)-\(label)") {
                let name = "decode/\(kind)-\(label)"
                guard let data = makeFile(kind, photo), let probe = try? ImageCodersManager.shared.decode(data) else {
                    log("skipping \(name): not built in, or the file could not be made")
                    continue
                }
                let megapixels = Double(probe.width * probe.height) / 1e6
                if rawDecode(kind, data) {
                    let (imagekit, raw) = measurement.run(
                        work: megapixels,
                        {
                            _ = try? ImageCodersManager.shared.decode(data)
                        },
                        {
                            _ = rawDecode(kind, data)
                        })
                    rows.append([
                        name, "\(probe.width)x\(probe.height)", "\(data.count)", format(imagekit), format(raw),
                        format(imagekit / raw, 3),
                    ])
                    report.jsonLine([
                        "case": name, "format": kind, "width": probe.width, "height": probe.height, "bytes": data.count,
                        "imagekit_mps": imagekit, "raw_mps": raw, "ratio": imagekit / raw,
                    ])
                } else {
                    let imagekit = measurement.run(work: megapixels) { _ = try? ImageCodersManager.shared.decode(data) }
                    rows.append([name, "\(probe.width)x\(probe.height)", "\(data.count)", format(imagekit), "—", "—"])
                    report.jsonLine([
                        "case": name, "format": kind, "width": probe.width, "height": probe.height, "bytes": data.count,
                        "imagekit_mps": imagekit,
                    ])
                }
            }
        }
        guard !rows.isEmpty else { return }
        report.table(
            "Photo formats: decode throughput (megapixels/s, single thread; raw = the C library straight; BMP is parsed in Swift)",
            header: ["case", "size", "bytes", "ImageKit MP/s", "raw C MP/s", "ratio"], rows: rows)
    }

    // MARK: - SVG

    /// A typical icon: three paths on a 24-unit grid, drawn at 256 × 256.
    static let svgIcon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="256" height="256">
        <path fill="#1a73e8" d="M12 3 2 12h3v8h6v-6h2v6h6v-8h3L12 3z"/>
        <path fill="none" stroke="#0b57d0" stroke-width="1.5" stroke-linejoin="round" d="M4 12l8-7 8 7"/>
        <circle cx="18" cy="6" r="3" fill="#ea4335" stroke="#fff" stroke-width="1"/>
        </svg>
        """

    /// A complex illustration, 1024 × 768: 400 shapes with gradients, strokes, opacity and
    /// transformed groups (deterministic).
    static var svgIllustration: String {
        var random = UInt64(0x5EED)
        func next(_ range: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(range))
        }
        var body = """
            <defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#8ec5ff"/>\
            <stop offset="1" stop-color="#fef6e4"/></linearGradient><radialGradient id="sun"><stop offset="0" \
            stop-color="#fff6a0"/><stop offset="1" stop-color="#ff9f1c" stop-opacity="0"/></radialGradient></defs>\
            <rect width="1024" height="768" fill="url(#sky)"/><circle cx="800" cy="160" r="140" fill="url(#sun)"/>
            """
        for group in 0..<8 {
            body += #"<g transform="translate(\#(next(200)) \#(next(100))) rotate(\#(next(30) - 15))" opacity="0.9">"#
            for _ in 0..<50 {
                let (x, y, w, h) = (next(1024), next(768), 10 + next(120), 10 + next(90))
                let colour = String(format: "#%02x%02x%02x", next(256), next(256), next(256))
                switch next(3) {
                case 0:
                    body +=
                        #"<ellipse cx="\#(x)" cy="\#(y)" rx="\#(w / 2)" ry="\#(h / 2)" fill="\#(colour)" fill-opacity="0.7"/>"#
                case 1:
                    body +=
                        #"<path d="M\#(x) \#(y) q\#(w) -\#(h) \#(w * 2) 0 t\#(w) \#(h) z" fill="\#(colour)" "#
                        + #"stroke="rgb(34,34,34)" stroke-width="\#(1 + group % 3)"/>"#
                default:
                    body +=
                        #"<rect x="\#(x)" y="\#(y)" width="\#(w)" height="\#(h)" rx="6" fill="url(#sky)" stroke="\#(colour)"/>"#
                }
            }
            body += "</g>"
        }
        return #"<svg xmlns="http://www.w3.org/2000/svg" width="1024" height="768">"# + body + "</svg>"
    }

    private func svgRows() {
        let cases = [("svg/icon-256", Self.svgIcon), ("svg/illustration-1024x768", Self.svgIllustration)]
            .filter { options.includes($0.0) }
        guard !cases.isEmpty, ImageFormat.svg.isDecodingSupported else { return }
        let measurement = PairedMeasurement(minTime: options.minTime)
        var rows: [[String]] = []
        for (name, text) in cases {
            let data = Data(text.utf8)
            guard let probe = try? ImageCodersManager.shared.decode(data) else { continue }
            let (width, height) = (Int32(probe.width), Int32(probe.height))
            let (imagekit, raw) = measurement.run(
                work: Double(probe.width * probe.height) / 1e6,
                { _ = try? ImageCodersManager.shared.decode(data) },
                { _ = data.withUnsafeBytes { ik_raw_svg_render($0.baseAddress!, $0.count, width, height) } })
            rows.append([
                name, "\(probe.width)x\(probe.height)", "\(data.count)", format(imagekit), format(raw),
                format(imagekit / raw, 3),
            ])
            report.jsonLine([
                "case": name, "width": probe.width, "height": probe.height, "bytes": data.count,
                "imagekit_mps": imagekit, "raw_mps": raw, "ratio": imagekit / raw,
            ])
        }
        report.table(
            "SVG: drawn with librsvg (megapixels/s, single thread; raw = librsvg into a cairo surface, straight from C)",
            header: ["case", "size", "bytes", "ImageKit MP/s", "raw C MP/s", "ratio"], rows: rows)
    }

    // MARK: - HDR

    /// A 12 MP PQ / BT.2020 AVIF (the synthetic photo with its whites at 406 cd/m², twice SDR
    /// white, so the tone curve's knee is crossed) decoded to sRGB with tone mapping, beside
    /// libavif decoding the same file to its 10-bit samples (what ImageKit starts from).
    private func hdrRows() {
        let name = "hdr/pq-avif-12mp"
        guard options.includes(name), !options.quick, ImageFormat.avif.isDecodingSupported else { return }
        let photo = SyntheticImages.photo(width: 4000, height: 3000)
        let codes: [UInt16] = (0..<256).map { value in
            let v = Double(value) / 255
            let linear = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
            let y = pow(linear * 406 / 10_000, 0.1593017578125)
            let pq = pow((0.8359375 + 18.8515625 * y) / (1 + 18.6875 * y), 78.84375)
            return UInt16((pq * 1023).rounded())
        }
        let pixels = photo.packedRGBA()
        var rgb = [UInt16](repeating: 0, count: photo.width * photo.height * 3)
        for index in 0..<photo.width * photo.height {
            for channel in 0..<3 { rgb[index * 3 + channel] = codes[Int(pixels[index * 4 + channel])] }
        }
        var output: UnsafeMutableRawPointer?
        let size = ik_raw_avif_encode_pq(rgb, Int32(photo.width), Int32(photo.height), &output)
        guard size > 0, let output else {
            log("skipping \(name): the PQ AVIF could not be made")
            return
        }
        let data = Data(bytes: output, count: size)
        free(output)
        guard let probe = try? ImageCodersManager.shared.decode(data), probe.isToneMapped else {
            log("skipping \(name): the file did not decode as HDR")
            return
        }
        let measurement = PairedMeasurement(minTime: options.minTime)
        let (imagekit, raw) = measurement.run(
            work: 12,
            { _ = try? ImageCodersManager.shared.decode(data) },
            {
                var samples: UnsafeMutablePointer<UInt16>?
                var width: Int32 = 0, height: Int32 = 0
                _ = data.withUnsafeBytes { ik_raw_avif_decode16($0.baseAddress!, $0.count, &samples, &width, &height) }
                free(samples)
            })
        report.jsonLine([
            "case": name, "width": 4000, "height": 3000, "bytes": data.count, "imagekit_mps": imagekit,
            "raw_mps": raw, "ratio": imagekit / raw,
        ])
        report.table(
            "HDR: a PQ AVIF tone-mapped to sRGB (megapixels/s, single thread; raw = libavif to 10-bit samples, no tone mapping)",
            header: ["case", "size", "bytes", "ImageKit MP/s", "raw C MP/s", "ratio"],
            rows: [[name, "4000x3000", "\(data.count)", format(imagekit), format(raw), format(imagekit / raw, 3)]])
    }

    // MARK: - Colour

    private func profile(_ which: Int32) -> Data {
        var size = 0
        let memory = ik_raw_make_profile(which, &size)!
        defer { free(memory) }
        return Data(bytes: memory, count: size)
    }

    private func colorRows() {
        var rows: [[String]] = []
        let measurement = PairedMeasurement(minTime: options.minTime)
        if options.includes("color/to-srgb-12mp"), let p3 = try? ColorProfile(iccData: profile(0)) {
            let photo = SyntheticImages.photo(width: 4000, height: 3000)
            let pixels = photo.packedRGBA()
            var output = [UInt8](repeating: 0, count: pixels.count)
            let transform = p3.iccData.withUnsafeBytes { ik_raw_lcms_transform($0.baseAddress!, $0.count) }!
            defer { ik_raw_lcms_free(transform) }
            let (fast, lcms) = measurement.run(
                work: 12,
                {
                    _ = try? photo.convertedToSRGB(from: p3)
                },
                {
                    ik_raw_lcms_apply(transform, pixels, &output, 4000, 3000)
                })
            rows.append([
                "color/to-srgb-12mp", "\(p3.description) → sRGB", format(fast), format(lcms), format(fast / lcms, 2),
            ])
            report.jsonLine([
                "case": "color/to-srgb-12mp", "imagekit_mps": fast, "lcms2_mps": lcms, "ratio": fast / lcms,
            ])
        }
        if options.includes("thumb256/jpeg-adobe-rgb-12mp") {
            // The same 12 MP JPEG with and without an Adobe RGB profile: the cost of conversion
            // on a 256 px thumbnail (it runs after scaling).
            let photo = SyntheticImages.photo(width: 4000, height: 3000)
            var image = DecodedImage(frames: [ImageFrame(bitmap: photo)], format: .jpeg)
            let untagged = try! ImageCodersManager.shared.encode(
                image, as: .jpeg, options: ImageEncodingOptions(quality: 0.85))
            image.colorProfile = try! ColorProfile(iccData: profile(1))
            let tagged = try! ImageCodersManager.shared.encode(
                image, as: .jpeg, options: ImageEncodingOptions(quality: 0.85))
            let thumbnail = ImageDecodingOptions(thumbnailPixelSize: PixelSize(256))
            let (withProfile, without) = measurement.run(
                work: 1,
                {
                    _ = try? ImageCodersManager.shared.decode(tagged, options: thumbnail)
                },
                {
                    _ = try? ImageCodersManager.shared.decode(untagged, options: thumbnail)
                })
            // Cost ratio: time with the profile over time without (1.00 = free).
            rows.append([
                "thumb256/jpeg-adobe-rgb-12mp", "vs untagged twin", format(1000 / withProfile, 2) + " ms",
                format(1000 / without, 2) + " ms", format(without / withProfile, 3) + "x cost",
            ])
            report.jsonLine([
                "case": "thumb256/jpeg-adobe-rgb-12mp", "ms": 1000 / withProfile, "untagged_ms": 1000 / without,
                "cost_ratio": without / withProfile,
            ])
        }
        guard !rows.isEmpty else { return }
        report.table(
            "Colour management (same run): fast path vs Little CMS's 8-bit transform; a tagged thumbnail vs its untagged twin",
            header: ["case", "what", "ImageKit", "baseline", "ratio"], rows: rows)
    }

    // MARK: - AVIF encoding

    private func encodeRows() {
        let cases = ["encode/avif-1mp", "encode/avif-speed", "encode/jxl-1mp", "encode/heic-1mp"]
        guard cases.contains(where: { options.includes($0) }) else { return }
        let photo = SyntheticImages.photo(width: 1024, height: 1024)
        let image = DecodedImage(frames: [ImageFrame(bitmap: photo)], format: .png)
        let pixels = photo.packedRGBA()
        let measurement = PairedMeasurement(minTime: options.minTime)
        var rows: [[String]] = []
        #if AVIF
        let avifSpeed = AVIFCoder.defaultSpeed
        #else
        let avifSpeed = 8  // no AVIF encoder in this build: the rows below are skipped
        #endif
        if options.includes("encode/avif-1mp"), ImageFormat.avif.isCodecSupported {
            // quality 0.75 = quantizer 16, at the default speed, against libavif straight.
            let (imagekit, raw) = measurement.run(
                work: 1.048576,
                {
                    _ = try? ImageCodersManager.shared.encode(
                        image, as: .avif, options: ImageEncodingOptions(quality: 0.75))
                },
                {
                    _ = ik_raw_avif_encode(pixels, 1024, 1024, 16, Int32(avifSpeed))
                })
            rows.append([
                "encode/avif-1mp", "speed \(avifSpeed)", format(imagekit, 2), format(raw, 2),
                format(imagekit / raw, 3), "", "",
            ])
            report.jsonLine([
                "case": "encode/avif-1mp", "imagekit_mps": imagekit, "raw_mps": raw, "ratio": imagekit / raw,
            ])
        }
        // JPEG XL and HEIC at the settings of the raw-C encoders (which write the bench's own
        // HEIC and JPEG XL files): distance 1 at effort 3; libheif quality 85, x265 ultrafast.
        let others: [(name: String, format: ImageFormat, setting: String, options: ImageEncodingOptions)] = [
            ("encode/jxl-1mp", .jpegXL, "distance 1, effort 3", ImageEncodingOptions(quality: 0.9, speed: 8)),
            ("encode/heic-1mp", .heic, "quality 85, ultrafast", ImageEncodingOptions(quality: 0.85, speed: 10)),
        ]
        for other in others where options.includes(other.name) && other.format.isCodecSupported {
            let (imagekit, raw) = measurement.run(
                work: 1.048576,
                { _ = try? ImageCodersManager.shared.encode(image, as: other.format, options: other.options) },
                {
                    var output: UnsafeMutableRawPointer?
                    _ =
                        other.format == .heic
                        ? ik_raw_heif_encode(pixels, 1024, 1024, 85, &output)
                        : ik_raw_jxl_encode(pixels, 1024, 1024, 1.0, &output)
                    free(output)
                })
            let bytes = (try? ImageCodersManager.shared.encode(image, as: other.format, options: other.options))?.count
            rows.append([
                other.name, other.setting, format(imagekit, 2), format(raw, 2), format(imagekit / raw, 3),
                bytes.map { "\($0)" } ?? "", "",
            ])
            report.jsonLine(["case": other.name, "imagekit_mps": imagekit, "raw_mps": raw, "ratio": imagekit / raw])
        }
        if options.includes("encode/avif-speed"), ImageFormat.avif.isCodecSupported {
            for speed in [4, 6, 8, 10] {
                let encoding = ImageEncodingOptions(quality: 0.75, speed: speed)
                guard let data = try? ImageCodersManager.shared.encode(image, as: .avif, options: encoding),
                    let decoded = try? ImageCodersManager.shared.decode(data)
                else { continue }
                let rate = measurement.run(work: 1.048576) {
                    _ = try? ImageCodersManager.shared.encode(image, as: .avif, options: encoding)
                }
                let psnr = Self.psnr(decoded.bitmap, photo)
                rows.append([
                    "encode/avif-speed\(speed)", "quality 0.75", format(rate, 2), "", "", "\(data.count)",
                    format(psnr, 2),
                ])
                report.jsonLine(["case": "encode/avif-speed\(speed)", "mps": rate, "bytes": data.count, "psnr": psnr])
            }
        }
        report.table(
            "Encoding (1024x1024 photo, one thread): ImageKit vs libavif, libjxl and libheif straight; libaom speeds",
            header: ["case", "setting", "ImageKit MP/s", "raw C MP/s", "ratio", "bytes", "PSNR dB"], rows: rows)
    }

    static func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
        let x = a.packedRGBA(), y = b.packedRGBA()
        var sum = 0.0
        for i in x.indices where i % 4 != 3 { let d = Double(x[i]) - Double(y[i]); sum += d * d }
        let mse = sum / Double(x.count / 4 * 3)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }
}
