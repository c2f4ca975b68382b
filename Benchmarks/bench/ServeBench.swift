import CRawCodecs
import Foundation
import ImageKit
import ImageKitServer

/// The image service's in-process work for `fit-in/256x256` (JPEG q80): ImageProcessor (probe,
/// plan, decode-time thumbnail, exact resample, encode) against TurboJPEG's scaled decode alone
/// (the C call a thumbnailer starts with), on photos of the sizes an image service sees.
struct ServeBench {
    var options: BenchOptions
    var report: Report

    static let names = [
        "serve/fit-in-256-jpeg-1200x800", "serve/fit-in-256-jpeg-1600x1200", "serve/fit-in-256-jpeg-2000x1333",
        "serve/fit-in-256-jpeg-progressive-1600x1200",
    ]

    func run() {
        // With --corpus: every JPEG of the directory, as one case (`serve/corpus`, mean per image),
        // so the same files can be given to a peer (Benchmarks/peers/serve_thumbor.py).
        if let directory = options.corpus {
            guard options.includes("serve/corpus") else { return }
            let files = DecodeBench.corpusCases(directory).filter { $0.format == .jpeg }.map(\.data)
            guard !files.isEmpty else { return }
            measure([("serve/corpus (\(files.count) JPEGs, mean per image)", files)])
            return
        }
        let cases = Self.names.filter(options.includes)
        guard !cases.isEmpty else { return }
        measure(
            cases.map { name in
                let size = name.split(separator: "-").last!.split(separator: "x").map { Int($0)! }
                let photo = DecodedImage(
                    frames: [ImageFrame(bitmap: SyntheticImages.photo(width: size[0], height: size[1]))], format: .jpeg)
                let data = try! ImageCodersManager.shared.encode(
                    photo, as: .jpeg,
                    options: .init(quality: 0.85, progressive: name.contains("progressive")))
                return (name, [data])
            })
    }

    /// One row per case: the pipeline and TurboJPEG's scaled decode over the case's files, per image.
    private func measure(_ cases: [(name: String, files: [Data])]) {
        let request = try! ImageRequest.parse(path: "/unsafe/fit-in/256x256/filters:quality(80)/example.com/a.jpg")
        let processor = ImageProcessor()
        let decompressor = ik_raw_tj_decompressor()!
        defer { ik_raw_tj_destroy(decompressor) }
        let measurement = PairedMeasurement(minTime: options.minTime)
        var rows: [[String]] = []
        for (name, files) in cases {
            guard let sample = try? processor.process(files[0], request: request) else {
                log("skipping \(name): the pipeline failed")
                continue
            }
            let count = Double(files.count)
            let (ours, raw) = measurement.run(
                work: count,
                {
                    for data in files { _ = try? processor.process(data, request: request) }
                },
                {
                    for data in files {
                        var image = ik_raw_image()
                        _ = data.withUnsafeBytes {
                            ik_raw_jpeg_decode_scaled(decompressor, $0.baseAddress!, $0.count, 256, &image)
                        }
                        ik_raw_image_free(&image)
                    }
                })
            // Where the pipeline's time goes, from its own stage clock (one more pass).
            var stages = ProcessingTimings()
            for data in files {
                guard let timings = try? processor.process(data, request: request).timings else { continue }
                stages.decode += timings.decode
                stages.transform += timings.transform
                stages.encode += timings.encode
            }
            func perImage(_ duration: Duration) -> Double {
                Double(duration.components.seconds) * 1000 / count + Double(duration.components.attoseconds) / 1e15
                    / count
            }
            log(
                "\(name): decode \(format(perImage(stages.decode), 3)) ms, resample and the rest \(format(perImage(stages.transform), 3)) ms, "
                    + "encode \(format(perImage(stages.encode), 3)) ms per image")
            let bytes = files.reduce(0) { $0 + $1.count } / files.count
            rows.append([
                name, "\(bytes / 1024) KB", "\(sample.width)x\(sample.height)", format(1000 / ours, 2),
                format(1000 / raw, 2),
                format(raw / ours, 2) + "x",
            ])
            report.jsonLine([
                "case": name, "ms_per_image": 1000 / ours, "turbojpeg_scaled_decode_ms": 1000 / raw,
                "ratio": raw / ours,
                "output_bytes": sample.data.count, "decode_ms": perImage(stages.decode),
                "transform_ms": perImage(stages.transform), "encode_ms": perImage(stages.encode),
            ])
        }
        report.table(
            "Image service, in process: fit-in/256x256 JPEG q80 (decode + resample + encode) vs TurboJPEG's scaled decode alone",
            header: ["case", "source", "output", "ms", "TurboJPEG scaled decode ms", "time ratio"], rows: rows)
    }
}
