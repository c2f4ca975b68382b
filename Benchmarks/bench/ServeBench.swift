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

    static let names = ["serve/fit-in-256-jpeg-1200x800", "serve/fit-in-256-jpeg-1600x1200", "serve/fit-in-256-jpeg-2000x1333",
                        "serve/fit-in-256-jpeg-progressive-1600x1200"]

    func run() {
        let cases = Self.names.filter(options.includes)
        guard !cases.isEmpty else { return }
        let request = try! ImageRequest.parse(path: "/unsafe/fit-in/256x256/filters:quality(80)/example.com/a.jpg")
        let processor = ImageProcessor()
        let decompressor = ik_raw_tj_decompressor()!
        defer { ik_raw_tj_destroy(decompressor) }
        let measurement = PairedMeasurement(minTime: options.minTime)
        var rows: [[String]] = []
        for name in cases {
            let size = name.split(separator: "-").last!.split(separator: "x").map { Int($0)! }
            let photo = DecodedImage(frames: [ImageFrame(bitmap: SyntheticImages.photo(width: size[0], height: size[1]))], format: .jpeg)
            let data = try! ImageCodersManager.shared.encode(photo, as: .jpeg,
                                                             options: .init(quality: 0.85, progressive: name.contains("progressive")))
            guard let sample = try? processor.process(data, request: request) else {
                log("skipping \(name): the pipeline failed")
                continue
            }
            let (ours, raw) = measurement.run(work: 1, {
                _ = try? processor.process(data, request: request)
            }, {
                var image = ik_raw_image()
                _ = data.withUnsafeBytes { ik_raw_jpeg_decode_scaled(decompressor, $0.baseAddress!, $0.count, 256, &image) }
                ik_raw_image_free(&image)
            })
            rows.append([name, "\(data.count / 1024) KB", "\(sample.width)x\(sample.height)", format(1000 / ours, 2), format(1000 / raw, 2),
                         format(raw / ours, 2) + "x"])
            report.jsonLine(["case": name, "ms_per_image": 1000 / ours, "turbojpeg_scaled_decode_ms": 1000 / raw, "ratio": raw / ours,
                             "output_bytes": sample.data.count])
        }
        report.table("Image service, in process: fit-in/256x256 JPEG q80 (decode + resample + encode) vs TurboJPEG's scaled decode alone",
                     header: ["case", "source", "output", "ms", "TurboJPEG scaled decode ms", "time ratio"], rows: rows)
    }
}
