import Foundation
import ImageKit

/// What an `aq:ssimulacra2:70` search costs against one plain q80 encode of the same answer (the
/// goal is at most 3×), and where its time goes: the reference's half of the metric, and per try
/// the encode, the decode and the comparison. Photos fitted in 800 × 800 as the service's
/// answers; medians over the photos (`--transform-source`, else one generated photo).
///
/// `--quality-curves` instead prints each format's mean SSIMULACRA2 at qualities 10, 15, …, 100
/// (`--quality-step`) over the photos, the curves `QualityScale` searches on; with `--json`, each
/// photo's curve as well.
struct AutoQualityBench {
    var options: BenchOptions
    var report: Report

    static let formats: [ImageFormat] = [.jpeg, .webp, .avif, .jpegXL, .heic]
    static let target = AutoQuality(.ssimulacra2(target: 70))

    func run() {
        let formats = Self.formats.filter { options.includes("autoquality/\($0.rawValue)") }
        guard !formats.isEmpty else { return }
        let photos = self.photos()
        if options.qualityCurves {
            printCurves(photos, formats: formats)
            return
        }
        var rows: [[String]] = []
        for format in formats {
            var times: [String: [Double]] = [:]
            var tries: [Double] = []
            for photo in photos {
                guard let measured = measure(photo, as: format) else {
                    log("skipping autoquality/\(format.rawValue): the photo would not encode")
                    continue
                }
                tries.append(measured.tries)
                for (stage, milliseconds) in measured.times { times[stage, default: []].append(milliseconds) }
            }
            guard let searches = times["search"], let encodes = times["encode"] else { continue }
            let name = "autoquality/\(format.rawValue)"
            let ratio = median(zip(searches, encodes).map { $0 / $1 })
            let stages = ["encode", "reference", "decode", "compare", "search"]
            rows.append(
                [name] + stages.map { Self.format(median(times[$0] ?? []), 2) }
                    + [Self.format(median(tries), 1), Self.format(ratio, 1)])
            var line: [String: Any] = ["case": name, "photos": searches.count, "tries": median(tries)]
            for stage in stages { line["\(stage)_ms"] = median(times[stage] ?? []) }
            line["search_per_encode"] = ratio
            report.jsonLine(line)
        }
        report.table(
            "Autoquality ssimulacra2:70 against one q80 encode (one thread; ms, medians over \(photos.count) photos)",
            header: ["case", "q80 encode", "reference", "decode", "compare", "search", "tries", "search/encode"],
            rows: rows)
    }

    static func format(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

    /// Milliseconds per stage for one photo, and the tries its search made; nil when it fails.
    func measure(_ photo: Bitmap, as format: ImageFormat) -> (times: [String: Double], tries: Double)? {
        let still = DecodedImage(frames: [ImageFrame(bitmap: photo)], format: .png)
        let coders = ImageCodersManager.shared
        let decoding = ImageDecodingOptions(appliesOrientation: false)
        guard let plain = try? coders.encode(still, as: format, options: .init(quality: 0.8)),
            let reference = try? PerceptualReference(photo, metric: .ssimulacra2),
            let decoded = try? coders.decode(plain, options: decoding),
            let search = try? coders.encode(still, as: format, options: .init(), autoQuality: Self.target)
        else { return nil }
        let measurement = PairedMeasurement(minRuns: 3, minTime: options.minTime / 4)
        func milliseconds(_ body: () -> Void) -> Double { 1000 / measurement.run(work: 1, body) }
        let times = [
            "encode": milliseconds { _ = try? coders.encode(still, as: format, options: .init(quality: 0.8)) },
            "reference": milliseconds { _ = try? PerceptualReference(photo, metric: .ssimulacra2) },
            "decode": milliseconds { _ = try? coders.decode(plain, options: decoding) },
            "compare": milliseconds { _ = try? reference.compare(decoded.frames[0].bitmap) },
            "search": milliseconds {
                _ = try? coders.encode(still, as: format, options: .init(), autoQuality: Self.target)
            },
        ]
        return (times, Double(search.encodes))
    }

    func printCurves(_ photos: [Bitmap], formats: [ImageFormat]) {
        let qualities = Array(stride(from: 10, through: 100, by: options.qualityStep))
        var rows: [[String]] = []
        for format in formats {
            var sums = [Double](repeating: 0, count: qualities.count)
            var count = 0
            for photo in photos {
                let still = DecodedImage(frames: [ImageFrame(bitmap: photo)], format: .png)
                guard let reference = try? PerceptualReference(photo, metric: .ssimulacra2) else { continue }
                let scores = qualities.compactMap { quality -> Double? in
                    guard
                        let data = try? ImageCodersManager.shared.encode(
                            still, as: format, options: .init(quality: Double(quality) / 100)),
                        let decoded = try? ImageCodersManager.shared.decode(
                            data, options: ImageDecodingOptions(appliesOrientation: false))
                    else { return nil }
                    return try? reference.compare(decoded.frames[0].bitmap)
                }
                guard scores.count == qualities.count else { continue }
                report.jsonLine([
                    "case": "curve/\(format.rawValue)/photo", "photo": count, "qualities": qualities, "scores": scores,
                    "detail": reference.detail,
                ])
                for index in scores.indices { sums[index] += scores[index] }
                count += 1
            }
            guard count > 0 else { continue }
            let means = sums.map { $0 / Double(count) }
            rows.append(["curve/\(format.rawValue)"] + means.map { Self.format($0, 1) })
            report.jsonLine([
                "case": "curve/\(format.rawValue)", "photos": count, "qualities": qualities, "mean": means,
            ])
        }
        report.table(
            "Mean SSIMULACRA2 by quality over \(photos.count) photos", header: ["format"] + qualities.map(String.init),
            rows: rows)
    }

    /// The transform sources (or a generated photo), fitted in 800 × 800 as the service's answers.
    func photos() -> [Bitmap] {
        let fit = ImageResizingTransformer(size: PixelSize(800), mode: .fit)
        let sources: [DecodedImage]
        if options.transformSources.isEmpty {
            let photo = SyntheticImages.photo(width: 1155, height: 866)
            sources = [DecodedImage(frames: [ImageFrame(bitmap: photo)], format: .jpeg)]
        } else {
            sources = options.transformSources.compactMap { path in
                FileManager.default.contents(atPath: path).flatMap { try? ImageCodersManager.shared.decode($0) }
            }
        }
        return sources.compactMap { try? (fit.transform($0) ?? $0).frames[0].bitmap }
    }
}
