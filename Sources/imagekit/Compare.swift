import ArgumentParser
import Foundation
import ImageKit

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Score how close images look to a reference (SSIMULACRA2 or DSSIM).",
        discussion: """
            Decodes the reference and each distorted image (sRGB, orientation applied; transparent \
            pixels seen over mid grey) and prints one score per image: SSIMULACRA2 (100 identical, \
            ≈ 90 visually lossless, ≈ 80 high, ≈ 70 web quality) or DSSIM (0 identical). The images \
            must have the reference's size. Exits 1 when any image fails.
            """
    )

    @Argument(help: "The reference image.") var reference: String
    @Argument(help: "Images to score against it.") var distorted: [String]
    @Option(help: "ssimulacra2 or dssim.") var metric: String = "ssimulacra2"
    @Flag(help: "Print one JSON object per image per line.") var json = false

    func run() throws {
        guard let metric = PerceptualMetric(rawValue: metric) else {
            throw ValidationError("--metric is ssimulacra2 or dssim")
        }
        let prepared = try PerceptualReference(try Self.bitmap(reference), metric: metric)
        var failed = false
        for path in distorted {
            do {
                let score = try prepared.compare(try Self.bitmap(path))
                if json {
                    let object: [String: Any] = ["file": path, metric.rawValue: score]
                    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                    print(String(decoding: data, as: UTF8.self))
                } else {
                    print("\(path): \(metric.rawValue) \(String(format: "%.4f", score))")
                }
            } catch let error as ImageError {
                failed = true
                FileHandle.standardError.write(Data("\(path): \(error.code.rawValue): \(error.message)\n".utf8))
            }
        }
        if failed { throw ExitCode(1) }
    }

    static func bitmap(_ path: String) throws -> Bitmap {
        let data = try readFile(path, mapped: true)
        return try ImageCodersManager.shared.decode(data, options: ImageDecodingOptions()).frames[0].bitmap
    }
}
