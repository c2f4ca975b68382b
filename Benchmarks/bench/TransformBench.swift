import Foundation
import ImageKit

/// The transformers on a 12 MP and a 1 MP photo, one thread, one transform at a time:
/// milliseconds per image and source megapixels per second. `Benchmarks/peers/transform_peers.py`
/// runs these rows and Pillow, libvips and OpenCV doing the same on the same photos.
struct TransformBench {
    var options: BenchOptions
    var report: Report

    static let operations: [(name: String, transformer: any ImageTransforming)] = [
        ("resize-fill-256", ImageResizingTransformer(size: PixelSize(256), mode: .fill)),
        ("resize-fit-1024", ImageResizingTransformer(size: PixelSize(1024), mode: .fit)),
        ("rotate-90", ImageRotationTransformer(degrees: 90)),
        ("rotate-30", ImageRotationTransformer(degrees: 30, fitSize: true)),
        ("blur-sigma-4", ImageBlurTransformer(sigma: 4)),
        ("round-corner-32", ImageRoundCornerTransformer(radius: 32)),
        ("crop-center", CenterCrop()),
        ("grayscale", ImageGrayscaleTransformer()),
    ]

    /// The centre half in each direction (a quarter of the pixels), whatever the photo's size.
    struct CenterCrop: ImageTransforming {
        var transformerKey: String { "CenterCrop" }
        func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
            try ImageCroppingTransformer(
                rect: PixelRect(
                    x: image.width / 4, y: image.height / 4,
                    width: image.width / 2, height: image.height / 2)
            ).transform(image)
        }
    }

    func run() {
        if let filter = options.filter, !filter.hasPrefix("transform/"),
            !Self.operations.contains(where: { "transform/\($0.name)/".contains(filter) })
        {
            return
        }
        var rows: [[String]] = []
        for photo in photos() {
            let label = "\(photo.width)x\(photo.height)"
            let megapixels = Double(photo.width * photo.height) / 1e6
            for (name, transformer) in Self.operations where options.includes("transform/\(name)/\(label)") {
                let name = "transform/\(name)/\(label)"
                guard (try? transformer.transform(photo)) != nil else {
                    log("skipping \(name): the transform failed")
                    continue
                }
                let rate = PairedMeasurement(minTime: options.minTime).run(work: 1) {
                    _ = try? transformer.transform(photo)
                }
                rows.append([name, format(1000 / rate, 2), format(megapixels * rate, 0)])
                report.jsonLine([
                    "case": name, "width": photo.width, "height": photo.height,
                    "ms_per_image": 1000 / rate, "mps": megapixels * rate,
                ])
            }
        }
        report.table("Transforms (one thread; MP/s of source pixels)", header: ["case", "ms", "MP/s"], rows: rows)
    }

    func photos() -> [DecodedImage] {
        if !options.transformSources.isEmpty {
            return options.transformSources.compactMap { path in
                guard let data = FileManager.default.contents(atPath: path),
                    let image = try? ImageCodersManager.shared.decode(data)
                else {
                    log("skipping \(path): not a decodable image")
                    return nil
                }
                return image
            }
        }
        log("generating 4000x3000 and 1155x866 photos for the transform rows…")
        return [(4000, 3000), (1155, 866)].map { width, height in
            DecodedImage(
                frames: [ImageFrame(bitmap: SyntheticImages.photo(width: width, height: height))], format: .jpeg)
        }
    }
}
