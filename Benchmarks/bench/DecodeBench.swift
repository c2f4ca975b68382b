import CRawCodecs
import Foundation
import ImageKit

/// Decode throughput: ImageKit (the public `ImageCodersManager.decode`, sniffing included)
/// against the raw C library on the same bytes, single-threaded, bytes in memory → RGBA.
struct DecodeBench {
    var options: BenchOptions
    var report: Report

    func run() {
        let cases: [SyntheticImages.Case]
        if let directory = options.corpus {
            cases = Self.corpusCases(directory)
        } else {
            let sizes =
                options.quick
                ? [(64, 64), (256, 256), (1024, 768)] : [(64, 64), (256, 256), (1024, 768), (4000, 3000)]
            // Generate only the sizes some wanted case name needs.
            let wanted = sizes.filter { size in
                SyntheticImages.kinds.contains { options.includes("\($0)/\(size.0)x\(size.1)") }
            }
            cases = SyntheticImages.corpus(sizes: wanted, log: log).filter { options.includes($0.name) }
        }
        let measurement = PairedMeasurement(minTime: options.minTime)
        let raw = RawDecoder()
        var rows: [[String]] = []
        for item in cases where options.includes(item.name) {
            guard raw.decode(item.data, format: item.format),
                let probe = try? ImageCodersManager.shared.decode(item.data)
            else {
                log("skipping \(item.name): not decodable by both")
                continue
            }
            let megapixels = Double(probe.width * probe.height * probe.frames.count) / 1e6
            let (imagekit, baseline) = measurement.run(
                work: megapixels,
                {
                    _ = try? ImageCodersManager.shared.decode(item.data)
                },
                {
                    raw.decode(item.data, format: item.format)
                })
            let ratio = imagekit / baseline
            rows.append([
                item.name, item.format.rawValue, "\(probe.width)x\(probe.height)", "\(probe.frames.count)",
                format(imagekit), format(baseline), format(ratio, 3),
            ])
            report.jsonLine([
                "case": item.name, "format": item.format.rawValue, "width": probe.width, "height": probe.height,
                "frames": probe.frames.count, "imagekit_mps": imagekit, "raw_mps": baseline, "ratio": ratio,
            ])
        }
        report.table(
            "Decode throughput (megapixels/s of output, median of ≥5 runs, single thread)",
            header: ["case", "format", "size", "frames", "ImageKit MP/s", "raw C MP/s", "ratio"], rows: rows)
    }

    static func corpusCases(_ directory: String) -> [SyntheticImages.Case] {
        let root = URL(fileURLWithPath: directory)
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        else {
            fail("cannot read \(directory)")
        }
        var cases: [SyntheticImages.Case] = []
        for case let url as URL in enumerator {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                let data = try? Data(contentsOf: url)
            else { continue }
            let format = ImageSignature(data).format
            guard format.isCodecSupported else { continue }
            let name = "decode/" + url.deletingPathExtension().lastPathComponent
            cases.append(SyntheticImages.Case(name: name, format: format, data: data, width: 0, height: 0, frames: 0))
        }
        return cases.sorted { $0.name < $1.name }
    }
}

/// Encode throughput of a 1024×768 RGBA photo-like image, ImageKit against the raw library.
struct EncodeBench {
    var options: BenchOptions
    var report: Report

    func run() {
        let names = ["encode-jpeg-q80", "encode-png", "encode-webp-q80"].filter(options.includes)
        let bitmap = SyntheticImages.photo(width: 1024, height: 768, alpha: true)
        let image = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png)
        let pixels = bitmap.packedRGBA()
        let megapixels = Double(1024 * 768) / 1e6
        let measurement = PairedMeasurement(minTime: options.minTime)
        let compressor = ik_raw_tj_compressor()!
        defer { ik_raw_tj_destroy(compressor) }
        var rows: [[String]] = []
        for name in names {
            let (imagekit, baseline): (Double, Double)
            switch name {
            case "encode-jpeg-q80":
                (imagekit, baseline) = measurement.run(
                    work: megapixels,
                    {
                        _ = try? ImageCodersManager.shared.encode(image, as: .jpeg, options: .init(quality: 0.8))
                    },
                    {
                        _ = ik_raw_jpeg_encode(compressor, pixels, 1024, 768, 80, 0, nil)
                    })
            case "encode-png":
                (imagekit, baseline) = measurement.run(
                    work: megapixels,
                    {
                        _ = try? ImageCodersManager.shared.encode(image, as: .png, options: .default)
                    },
                    {
                        _ = ik_raw_png_encode(pixels, 1024, 768, 1)
                    })
            default:
                (imagekit, baseline) = measurement.run(
                    work: megapixels,
                    {
                        _ = try? ImageCodersManager.shared.encode(image, as: .webp, options: .init(quality: 0.8))
                    },
                    {
                        _ = ik_raw_webp_encode(pixels, 1024, 768, 80)
                    })
            }
            rows.append([name, format(imagekit, 2), format(baseline, 2), format(imagekit / baseline, 3)])
            report.jsonLine([
                "case": name, "format": name.split(separator: "-")[1], "width": 1024, "height": 768, "frames": 1,
                "imagekit_mps": imagekit, "raw_mps": baseline, "ratio": imagekit / baseline,
            ])
        }
        report.table(
            "Encode throughput (1024x768 RGBA, megapixels/s)",
            header: ["case", "ImageKit MP/s", "raw C MP/s", "ratio"], rows: rows)
        pngLevels(measurement)
    }

    /// The zlib level of the disk cache's PNG re-encodes: speed and size per level, on an
    /// opaque photo and on one with alpha (the re-encode writes PNG only for images with alpha
    /// or PNG sources).
    func pngLevels(_ measurement: PairedMeasurement) {
        let levels = [1, 2, 3, 6]
        guard levels.contains(where: { options.includes("encode-png-level\($0)") }) else { return }
        var rows: [[String]] = []
        for alpha in [false, true] {
            let bitmap = SyntheticImages.photo(width: 1024, height: 768, alpha: alpha)
            let image = DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png)
            // The reference: libpng at zlib level 6 (its default filter heuristic), same pixels.
            let pixels = bitmap.packedRGBA()
            let libpngBytes = ik_raw_png_encode(pixels, 1024, 768, alpha ? 1 : 0)
            let libpngRate = measurement.run(work: Double(1024 * 768) / 1e6) {
                _ = ik_raw_png_encode(pixels, 1024, 768, alpha ? 1 : 0)
            }
            let libpngName = "encode-png-libpng6\(alpha ? "-alpha" : "")"
            rows.append([libpngName, format(libpngRate, 2), String(libpngBytes), "1.00", "1.000"])
            report.jsonLine(["case": libpngName, "mps": libpngRate, "bytes": libpngBytes, "level": 6])
            for level in levels where options.includes("encode-png-level\(level)") {
                let encoding = ImageEncodingOptions(compressionLevel: level)
                let bytes = (try? ImageCodersManager.shared.encode(image, as: .png, options: encoding))?.count ?? 0
                let rate = measurement.run(work: Double(1024 * 768) / 1e6) {
                    _ = try? ImageCodersManager.shared.encode(image, as: .png, options: encoding)
                }
                let name = "encode-png-level\(level)\(alpha ? "-alpha" : "")"
                rows.append([
                    name, format(rate, 2), String(bytes), format(rate / libpngRate, 2),
                    format(Double(bytes) / Double(libpngBytes), 3),
                ])
                report.jsonLine([
                    "case": name, "mps": rate, "bytes": bytes, "level": level,
                    "speed_vs_libpng6": rate / libpngRate, "size_vs_libpng6": Double(bytes) / Double(libpngBytes),
                ])
            }
        }
        report.table(
            "PNG levels (1024x768 photo, opaque and with alpha; ImageKit's libdeflate writer vs libpng at zlib level 6)",
            header: ["case", "MP/s", "bytes", "speed vs libpng6", "size vs libpng6"], rows: rows)
    }
}
