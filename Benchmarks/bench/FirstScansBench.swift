import Foundation
import ImageKit

/// `.thumbnailFromFirstScans` through the manager: a 256 px thumbnail load of a progressive
/// JPEG that stops once the DC scans are in, against the same load run to the end, over a
/// loader that hands the bytes over in 64 KiB pieces as fast as they are taken. The row shows
/// the bytes a network would carry; the times include no network.
struct FirstScansBench {
    var options: BenchOptions
    var report: Report

    func run(_ cases: [(name: String, data: Data)]) {
        var rows: [[String]] = []
        let measurement = PairedMeasurement(minTime: options.minTime)
        for item in cases {
            let name = "first-scans/" + item.name
            guard options.includes(name) else { continue }
            let loader = PiecewiseLoader(data: item.data)
            let manager = ImageManager(cache: nil, loader: loader)
            var context = ImageLoadContext(
                queryCacheType: .none, storeCacheType: .none, originalQueryCacheType: .none,
                originalStoreCacheType: .none)
            context.thumbnailPixelSize = PixelSize(256)
            let url = URL(string: "bench://photo.jpg")!
            guard let probe = Self.load(manager, url, [.thumbnailFromFirstScans], context), probe.image?.width == 256
            else {
                log("skipping \(name): no thumbnail")
                continue
            }
            let bytesRead = loader.lastSent
            let (early, whole) = measurement.run(
                work: 1,
                {
                    _ = Self.load(manager, url, [.thumbnailFromFirstScans], context)
                },
                {
                    _ = Self.load(manager, url, [], context)
                })
            let fraction = Double(bytesRead) / Double(item.data.count)
            rows.append([
                name, "\(item.data.count)", "\(bytesRead)", format(fraction * 100, 1) + " %", format(1000 / early, 2),
                format(1000 / whole, 2), format(early / whole, 2) + "x",
            ])
            report.jsonLine([
                "case": name, "ms_per_image": 1000 / early, "baseline_ms_per_image": 1000 / whole,
                "speedup": early / whole,
                "bytes_read": bytesRead, "file_bytes": item.data.count, "peak_pixel_bytes": 0,
            ])
        }
        report.table(
            "Thumbnail from the first scans (manager, .thumbnailFromFirstScans, 256 px) vs the same load of the whole file",
            header: ["case", "file bytes", "bytes read", "of file", "ms", "whole-file ms", "speedup"], rows: rows)
    }

    static func load(_ manager: ImageManager, _ url: URL, _ options: ImageLoadOptions, _ context: ImageLoadContext)
        -> ImageLoadResult?
    {
        let done = DispatchSemaphore(value: 0)
        let result = Box()
        manager.loadImage(with: url, options: options, context: context) { outcome in
            result.value = try? outcome.get()
            done.signal()
        }
        done.wait()
        return result.value
    }

    private final class Box: @unchecked Sendable {
        // Written by the completion before the semaphore is signalled, read after the wait.
        var value: ImageLoadResult?
    }
}

/// Serves one file in 64 KiB pieces on a background queue, reporting progress after each and
/// stopping when cancelled; remembers how many bytes the last load handed over.
final class PiecewiseLoader: ImageLoading, @unchecked Sendable {
    // Invariant for @unchecked Sendable: `sent` is only touched under `lock`.
    let data: Data
    private let lock = NSLock()
    private var sent = 0
    var lastSent: Int { lock.withLock { sent } }

    init(data: Data) { self.data = data }

    func canLoad(_ url: URL) -> Bool { url.scheme == "bench" }

    final class Token: ImageLoadCancellable, @unchecked Sendable {
        // Invariant: `cancelled` is only touched under `lock`.
        private let lock = NSLock()
        private var cancelled = false
        var isCancelled: Bool { lock.withLock { cancelled } }
        func cancel() { lock.withLock { cancelled = true } }
    }

    func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        let token = Token()
        let data = self.data
        DispatchQueue.global().async { [self] in
            var offset = 0
            while offset < data.count {
                if token.isCancelled { break }
                let end = min(data.count, offset + 65536)
                let piece = request.deliversReceivedBytes ? Data(data[offset..<end]) : nil
                offset = end
                lock.withLock { sent = offset }
                progress?(
                    ImageLoadProgress(receivedBytes: Int64(offset), expectedBytes: Int64(data.count), newBytes: piece))
            }
            if token.isCancelled {
                completion(.failure(ImageError(.cancelled, "cancelled")))
            } else {
                completion(.success(ImageLoadResponse(url: request.url, data: data)))
            }
        }
        return token
    }
}
