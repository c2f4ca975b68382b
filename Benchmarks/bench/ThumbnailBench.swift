import Foundation
import ImageKit

/// Decode-time thumbnails (fit inside 256×256) against full decode + resample in the same run,
/// with the peak pixel memory of one decode of each; and the cost of progressive previews.
struct ThumbnailBench {
    var options: BenchOptions
    var report: Report
    static let box = PixelSize(256)

    struct Case {
        var name: String
        var data: Data
    }

    func run() {
        var cases: [Case] = []
        if let directory = options.corpus {
            cases = DecodeBench.corpusCases(directory).map {
                Case(name: "thumb256/" + $0.name.dropFirst("decode/".count), data: $0.data)
            }
        } else if Self.generatedNames.contains(where: options.includes)
            || options.includes("progressive-jpeg-16-chunks/full size")
            || options.includes("first-scans/jpeg-progressive-4000x3000")
        {
            cases = generated()
        }
        var rows: [[String]] = []
        let measurement = PairedMeasurement(minTime: options.minTime)
        let thumbnailOptions = ImageDecodingOptions(thumbnailPixelSize: Self.box)
        for item in cases where options.includes(item.name) {
            guard let full = try? ImageCodersManager.shared.decode(item.data),
                let probe = try? ImageCodersManager.shared.decode(item.data, options: thumbnailOptions)
            else {
                log("skipping \(item.name): not decodable")
                continue
            }
            let size = PixelSize(width: probe.width, height: probe.height)
            let thumbnailPeak = peakPixelBytes {
                _ = try? ImageCodersManager.shared.decode(item.data, options: thumbnailOptions)
            }
            let baselinePeak = peakPixelBytes { _ = try? ImageCodersManager.shared.decode(item.data).resized(to: size) }
            let (fast, slow) = measurement.run(
                work: 1,
                {
                    _ = try? ImageCodersManager.shared.decode(item.data, options: thumbnailOptions)
                },
                {
                    _ = try? ImageCodersManager.shared.decode(item.data).resized(to: size)
                })
            let sourceMegapixels = Double(full.width * full.height * full.frames.count) / 1e6
            rows.append([
                item.name, "\(full.width)x\(full.height)", "\(size)", format(1000 / fast, 2), format(1000 / slow, 2),
                format(fast / slow * 1, 2) + "x", format(Double(thumbnailPeak) / 1e6, 2),
                format(Double(baselinePeak) / 1e6, 1),
                format(sourceMegapixels * fast, 0),
            ])
            report.jsonLine([
                "case": item.name, "ms_per_image": 1000 / fast, "peak_pixel_bytes": thumbnailPeak,
                "baseline_ms_per_image": 1000 / slow, "speedup": fast / slow,
                "baseline_peak_pixel_bytes": baselinePeak, "source_mps": sourceMegapixels * fast,
            ])
            _ = full
        }
        report.table(
            "Thumbnails: fit inside 256x256 at decode time vs full decode + resample (same run)",
            header: [
                "case", "source", "thumbnail", "ms", "baseline ms", "speedup", "peak MB", "baseline peak MB",
                "source MP/s",
            ],
            rows: rows)
        if options.corpus == nil { progressive(cases.first { $0.name.contains("jpeg-progressive-4000x3000") }) }
        FirstScansBench(options: options, report: report).run(
            cases.filter { $0.name.contains("progressive") }.map {
                (name: String($0.name.dropFirst("thumb256/".count)), data: $0.data)
            })
    }

    /// Bytes of pixel memory one run of `body` needs at its peak.
    func peakPixelBytes(_ body: () -> Void) -> Int {
        PixelMemory.resetPeak()
        let before = PixelMemory.currentBytes
        body()
        return PixelMemory.peakBytes - before
    }

    static let generatedNames = [
        "thumb256/jpeg-baseline-4000x3000", "thumb256/jpeg-progressive-4000x3000",
        "thumb256/png-4000x3000", "thumb256/webp-4000x3000", "thumb256/jpeg-baseline-8000x6000",
        "thumb256/jpeg-progressive-8000x6000", "thumb256/webp-alpha-4000x3000",
    ]

    func generated() -> [Case] {
        var cases: [Case] = []
        let codecs = ImageCodersManager.shared
        for (width, height) in [(4000, 3000), (8000, 6000)] {
            log("generating \(width)x\(height) thumbnail sources…")
            let photo = DecodedImage(
                frames: [ImageFrame(bitmap: SyntheticImages.photo(width: width, height: height))], format: .jpeg)
            if let data = try? codecs.encode(photo, as: .jpeg, options: .init(quality: 0.85)) {
                cases.append(Case(name: "thumb256/jpeg-baseline-\(width)x\(height)", data: data))
            }
            if let data = try? codecs.encode(photo, as: .jpeg, options: .init(quality: 0.85, progressive: true)) {
                cases.append(Case(name: "thumb256/jpeg-progressive-\(width)x\(height)", data: data))
            }
            if width == 4000 {
                if let data = try? codecs.encode(photo, as: .png, options: .default) {
                    cases.append(Case(name: "thumb256/png-\(width)x\(height)", data: data))
                }
                if let data = try? codecs.encode(photo, as: .webp, options: .init(quality: 0.8)) {
                    cases.append(Case(name: "thumb256/webp-\(width)x\(height)", data: data))
                }
                let translucent = DecodedImage(
                    frames: [ImageFrame(bitmap: SyntheticImages.photo(width: width, height: height, alpha: true))],
                    format: .webp)
                if let data = try? codecs.encode(translucent, as: .webp, options: .init(quality: 0.8)) {
                    cases.append(Case(name: "thumb256/webp-alpha-\(width)x\(height)", data: data))
                }
            }
        }
        return cases
    }

    /// Feeding a progressive JPEG in 16 chunks, asking for a preview after each, against one
    /// one-shot decode of the whole file; full-size and 256 px previews.
    func progressive(_ item: Case?) {
        guard let item,
            options.includes("progressive-jpeg-16-chunks/full size")
                || options.includes("progressive-jpeg-16-chunks/256 px")
        else { return }
        let measurement = PairedMeasurement(minTime: options.minTime)
        var rows: [[String]] = []
        for (label, decoding) in [
            ("full size", ImageDecodingOptions()), ("256 px", ImageDecodingOptions(thumbnailPixelSize: Self.box)),
        ] {
            var previews = 0
            let (fed, oneShot) = measurement.run(
                work: 1,
                {
                    let decoder = ProgressiveDecoder(options: decoding)
                    let step = item.data.count / 16
                    for chunk in 1...16 {
                        let end = chunk == 16 ? item.data.count : chunk * step
                        decoder.update(item.data.prefix(end), isFinal: chunk == 16)
                        if decoder.preview() != nil { previews += 1 }
                    }
                    _ = try? decoder.finalImage()
                },
                {
                    _ = try? ImageCodersManager.shared.decode(item.data, options: decoding)
                })
            let name = "progressive-jpeg-16-chunks/\(label)"
            rows.append([name, format(1000 / fed, 1), format(1000 / oneShot, 1), format(oneShot / fed, 2) + "x"])
            report.jsonLine([
                "case": name, "ms_per_image": 1000 / fed, "baseline_ms_per_image": 1000 / oneShot,
                "speedup": fed / oneShot, "peak_pixel_bytes": 0,
            ])
        }
        report.table(
            "Progressive decoding overhead (4000x3000 progressive JPEG fed in 16 chunks, preview after each, vs one-shot)",
            header: ["case", "ms (fed + previews)", "one-shot ms", "relative"], rows: rows)
    }
}
