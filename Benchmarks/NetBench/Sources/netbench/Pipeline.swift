import Foundation
import ImageKit

/// The pipeline case: 1000 photos of 50–300 KB loaded cold through `ImageManager` as 256 px
/// thumbnails (download, decode at thumbnail size, store original bytes and thumbnail), beside
/// the same run's download-only rate (the downloader alone) and decode-only rate (the same
/// bytes from memory, decoded as thumbnails on every core).
struct Pipeline {
    var prefix: String
    var www: String
    var count: Int
    var runs: Int
    /// Where each round's (fresh) cache directory is made.
    var cacheRoot: String
    static let concurrency = 16
    static let thumbnail = PixelSize(256)

    struct Result {
        var imagesPerSecond: Double
        var downloadOnly: Double
        var decodeOnly: Double
        /// The process's CPU (user + system, every thread) per image in each case, in ms: what the
        /// pipeline costs beyond its two parts, apart from idle cores.
        var cpuPerImage: (pipeline: Double, download: Double, decode: Double)
        /// The same pipeline storing nothing on disk (the thumbnails in memory only): what the
        /// disk write of each original costs the pipeline.
        var memoryOnly: Double
        var memoryOnlyCPUPerImage: Double
        var ratio: Double { imagesPerSecond / min(downloadOnly, decodeOnly) }
        var memoryOnlyRatio: Double { memoryOnly / min(downloadOnly, decodeOnly) }
    }

    /// The process's CPU time so far, in seconds (every thread).
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Runs `round` and answers its rate with the CPU per image it took, in ms.
    private func measured(_ round: () async throws -> Double) async rethrows -> (rate: Double, cpu: Double) {
        let before = Self.processCPU()
        let rate = try await round()
        return (rate, (Self.processCPU() - before) * 1000 / Double(count))
    }

    /// Writes `p0.jpg` … into the served directory: 50 distinct photo-like JPEGs (textured
    /// gradients, 50–300 KB), each served under 20 names.
    func writePhotos() throws -> [Data] {
        var generator = SplitMix(seed: 7)
        var distinct: [Data] = []
        while distinct.count < 50 {
            let width = 800 + Int(generator.next() % 800)
            let height = width * 3 / 4
            let noise = 6 + Int(generator.next() % 30)
            let data = try photo(width: width, height: height, noise: noise, seed: generator.next())
            if (50_000...300_000).contains(data.count) { distinct.append(data) }
        }
        var files: [Data] = []
        for index in 0..<count {
            let data = distinct[index % distinct.count]
            try data.write(to: URL(fileURLWithPath: "\(www)/p\(index).jpg"))
            files.append(data)
        }
        return files
    }

    private func photo(width: Int, height: Int, noise: Int, seed: UInt64) throws -> Data {
        var random = SplitMix(seed: seed)
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                let n = Int(random.next() % UInt64(noise)) - noise / 2
                row[x * 4] = UInt8(clamping: x * 255 / width + n)
                row[x * 4 + 1] = UInt8(clamping: y * 255 / height + n)
                row[x * 4 + 2] = UInt8(clamping: (x + y) * 127 / (width + height) + 64 + n)
                row[x * 4 + 3] = 255
            }
        }
        let bitmap = buffer.freeze(isOpaque: true)
        return try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .jpeg), as: .jpeg,
            options: .init(quality: 0.85))
    }

    func run() async throws -> Result {
        let files = try writePhotos()
        var pipeline: [(rate: Double, cpu: Double)] = [], memoryOnly = pipeline, download = pipeline, decode = pipeline
        _ = try await managerRound()  // warm-up: page cache, nginx, lazy libraries
        for _ in 0..<runs {
            pipeline.append(try await measured { try await managerRound() })
            memoryOnly.append(try await measured { try await managerRound(storesOnDisk: false) })
            download.append(await measured { await downloadRound() })
            decode.append(await measured { decodeRound(files) })
        }
        return Result(
            imagesPerSecond: median(pipeline.map(\.rate)), downloadOnly: median(download.map(\.rate)),
            decodeOnly: median(decode.map(\.rate)),
            cpuPerImage: (median(pipeline.map(\.cpu)), median(download.map(\.cpu)), median(decode.map(\.cpu))),
            memoryOnly: median(memoryOnly.map(\.rate)), memoryOnlyCPUPerImage: median(memoryOnly.map(\.cpu)))
    }

    private var downloaderConfiguration: ImageDownloaderConfiguration {
        ImageDownloaderConfiguration(
            maxConcurrentDownloads: Self.concurrency, allowsInvalidSSLCertificates: true,
            maxConnectionsPerHost: Self.concurrency)
    }

    /// Images per second through a fresh manager with an empty cache directory (with
    /// `storesOnDisk` false, nothing is written there: thumbnails go to memory only).
    private func managerRound(storesOnDisk: Bool = true) async throws -> Double {
        let directory = URL(fileURLWithPath: cacheRoot).appendingPathComponent("netbench-pipeline-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try ImageCache(directory: directory, configuration: .init(disk: .init(sweepsAtOpen: false)))
        let manager = ImageManager(cache: cache, loader: ImageDownloader(configuration: downloaderConfiguration))
        let context = ImageLoadContext(
            storeCacheType: storesOnDisk ? .all : .memory, originalStoreCacheType: storesOnDisk ? .disk : .none,
            thumbnailPixelSize: Self.thumbnail)
        let start = now()
        let failures = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask {
                    (try? await manager.loadImage(URL(string: "\(prefix)/p\(index).jpg")!, context: context))?.image
                        == nil
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        let seconds = now() - start
        precondition(failures == 0, "pipeline: \(failures) loads failed")
        // Let the background disk writes finish before the next round starts.
        while manager.isRunning { try? await Task.sleep(nanoseconds: 1_000_000) }
        try? await Task.sleep(nanoseconds: 200_000_000)
        return Double(count) / seconds
    }

    private func downloadRound() async -> Double {
        let downloader = ImageDownloader(configuration: downloaderConfiguration)
        let start = now()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask { _ = try? await downloader.load(URL(string: "\(prefix)/p\(index).jpg")!) }
            }
        }
        return Double(count) / (now() - start)
    }

    /// Thumbnail decodes of the same bytes, one thread per core.
    private func decodeRound(_ files: [Data]) -> Double {
        let threads = ProcessInfo.processInfo.activeProcessorCount
        let options = ImageDecodingOptions(thumbnailPixelSize: Self.thumbnail)
        let start = now()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in stride(from: thread, to: files.count, by: threads) {
                _ = try? ImageCodersManager.shared.decode(files[index], options: options)
            }
        }
        return Double(files.count) / (now() - start)
    }
}

/// A small deterministic generator (the photos are the same on every run).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
