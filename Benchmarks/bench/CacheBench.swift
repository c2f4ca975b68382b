import Foundation
import ImageKit

/// Cache latency and throughput: memory hits, memory stores, disk hits (read, read + decode),
/// disk stores and the sweep of a 100 000-entry directory.
struct CacheBench {
    var options: BenchOptions
    var report: Report

    struct Row {
        var name: String
        var p50: Double
        var p99: Double
        var opsPerSecond: Double
    }

    func run() async {
        let names = [
            "cache-memory-hit", "cache-memory-store", "cache-disk-hit-read", "cache-disk-hit-decode",
            "cache-disk-store", "manager-memory-hit", "manager-hit-stage", "manager-disk-hit", "cache-sweep-100k",
            "pixel-memory",
        ]
        guard names.contains(where: options.includes) else { return }
        var rows: [Row] = []
        if options.includes("cache-memory-hit") { rows.append(memoryHit()) }
        if options.includes("cache-memory-store") { rows.append(memoryStore()) }
        if options.includes("manager-hit-stage") { rows += managerHitStages() }
        if options.includes("manager-memory-hit") { rows.append(await managerMemoryHit()) }
        if options.includes("pixel-memory") { rows += pixelMemory() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "imagekit-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        if ["cache-disk-hit-read", "cache-disk-hit-decode", "cache-disk-store", "manager-disk-hit"].contains(
            where: options.includes)
        {
            rows += await disk(directory)
        }
        if options.includes("cache-sweep-100k") { rows.append(sweep(directory.appendingPathComponent("sweep"))) }

        report.table(
            "Caches (latency per operation; p50/p99 of single operations)",
            header: ["case", "p50", "p99", "ops/s"],
            rows: rows.map { [$0.name, Self.duration($0.p50), Self.duration($0.p99), format($0.opsPerSecond, 0)] })
        for row in rows {
            report.jsonLine(["case": row.name, "p50_ns": row.p50, "p99_ns": row.p99, "ops_per_s": row.opsPerSecond])
        }
    }

    static func duration(_ nanoseconds: Double) -> String {
        if nanoseconds < 10_000 { return format(nanoseconds, 0) + " ns" }
        if nanoseconds < 10_000_000 { return format(nanoseconds / 1000, 1) + " µs" }
        return format(nanoseconds / 1e6, 1) + " ms"
    }

    /// The cost of reading the clock twice, subtracted from single-operation timings.
    static let timerOverhead: Double = {
        var samples: [Double] = []
        for _ in 0..<10_000 { let start = now(); samples.append((now() - start) * 1e9) }
        return median(samples)
    }()

    /// Times `operations` single calls; returns (p50, p99) in ns and operations per second.
    func latencies(_ operations: Int, _ body: (Int) -> Void) -> (Double, Double, Double) {
        var samples = [Double](repeating: 0, count: operations)
        let begin = now()
        for index in 0..<operations {
            let start = now()
            body(index)
            samples[index] = max(0, (now() - start) * 1e9 - Self.timerOverhead)
        }
        let elapsed = now() - begin
        samples.sort()
        return (samples[operations / 2], samples[operations * 99 / 100], Double(operations) / elapsed)
    }

    func memoryHit() -> Row {
        let cache = MemoryCache(configuration: .init(costLimit: 0))
        let image = DecodedImage(
            frames: [ImageFrame(bitmap: SyntheticImages.photo(width: 64, height: 64))], format: .jpeg)
        let keys = (0..<10_000).map { "https://images.example.com/photos/\($0).jpg" }
        for key in keys { cache.setImage(image, forKey: key) }
        var hits = 0
        let order = (0..<200_000).map { ($0 &* 7919) % keys.count }
        let (p50, p99, rate) = latencies(order.count) { index in
            if cache.image(forKey: keys[order[index]]) != nil { hits += 1 }
        }
        precondition(hits == order.count)
        return Row(name: "cache-memory-hit (10k entries)", p50: p50, p99: p99, opsPerSecond: rate)
    }

    func memoryStore() -> Row {
        let cache = MemoryCache(configuration: .init(costLimit: 0, countLimit: 10_000))
        let image = DecodedImage(
            frames: [ImageFrame(bitmap: SyntheticImages.photo(width: 64, height: 64))], format: .jpeg)
        let keys = (0..<50_000).map { "https://images.example.com/photos/\($0).jpg" }
        let (p50, p99, rate) = latencies(keys.count) { cache.setImage(image, forKey: keys[$0]) }
        return Row(name: "cache-memory-store (LRU at 10k)", p50: p50, p99: p99, opsPerSecond: rate)
    }

    /// Times `operations` single async calls; returns (p50, p99) in ns and operations per second.
    func latencies(_ operations: Int, _ body: (Int) async -> Void) async -> (Double, Double, Double) {
        var samples = [Double](repeating: 0, count: operations)
        let begin = now()
        for index in 0..<operations {
            let start = now()
            await body(index)
            samples[index] = max(0, (now() - start) * 1e9 - Self.timerOverhead)
        }
        let elapsed = now() - begin
        samples.sort()
        return (samples[operations / 2], samples[operations * 99 / 100], Double(operations) / elapsed)
    }

    /// `ImageManager.loadImage` answered from memory: URL checks, failed-URL list, key, memory
    /// lookup, all without suspending. Measured before the disk rows: their 200 MB of writes
    /// leave the kernel flushing pages on both cores for seconds afterwards, which a 500 ns
    /// operation would otherwise pay for. The disk cache behind it is never touched by a hit.
    func managerMemoryHit() async -> Row {
        let cache = ImageCache(
            memoryCache: MemoryCache(configuration: .init(costLimit: 0)), diskCache: UnavailableDiskCache())
        let manager = ImageManager(cache: cache, loader: NoLoader())
        let image = DecodedImage(
            frames: [ImageFrame(bitmap: SyntheticImages.photo(width: 64, height: 64))], format: .jpeg)
        let urls = (0..<10_000).map { URL(string: "https://images.example.com/photos/\($0).jpg")! }
        for url in urls { cache.memoryCache.setImage(image, forKey: CacheKey(url).identity) }
        let order = (0..<200_000).map { ($0 &* 7919) % urls.count }
        var hits = 0
        let (p50, p99, rate) = await latencies(order.count) { index in
            if (try? await manager.loadImage(urls[order[index]]))?.cacheType == .memory { hits += 1 }
        }
        precondition(hits == order.count)
        return Row(name: "manager-memory-hit (10k entries)", p50: p50, p99: p99, opsPerSecond: rate)
    }

    /// A bitmap's memory allocated and written whole, as a decoder does: fresh from the kernel
    /// (the spares released first, so every page is faulted in: a thumbnail kept by a memory
    /// cache, the first large decode of a process) and reused (a spare mapping, what a decode
    /// whose result is dropped gets). The difference is what fresh memory costs on this machine.
    func pixelMemory() -> [Row] {
        var rows: [Row] = []
        for (width, height, count) in [(256, 192, 2000), (640, 480, 500), (4000, 3000, 30)] {
            for fresh in [true, false] {
                PixelMemory.releaseSpares()
                let timing = latencies(count) { _ in
                    if fresh { PixelMemory.releaseSpares() }
                    guard let buffer = try? PixelBuffer(width: width, height: height) else { fatalError("no memory") }
                    buffer.baseAddress.initializeMemory(
                        as: UInt8.self, repeating: 7, count: buffer.bytesPerRow * height)
                }
                rows.append(
                    Row(
                        name: "pixel-memory-\(fresh ? "fresh" : "reused") (\(width)x\(height), written)", p50: timing.0,
                        p99: timing.1, opsPerSecond: timing.2))
            }
        }
        PixelMemory.releaseSpares()
        return rows
    }

    /// The stages a manager's memory hit passes, each alone on the same 10 000 entries, so that
    /// a regression of `manager-memory-hit` shows which stage moved: the key (the URL's string
    /// and ``CacheKey``), the lookup (``ImageCache/imageFromMemory(forKey:)``: the memory cache's
    /// lock, hash and LRU touch) and the delivery (the ``ImageLoadResult`` a caller gets).
    func managerHitStages() -> [Row] {
        let cache = ImageCache(
            memoryCache: MemoryCache(configuration: .init(costLimit: 0)), diskCache: UnavailableDiskCache())
        let image = DecodedImage(
            frames: [ImageFrame(bitmap: SyntheticImages.photo(width: 64, height: 64))], format: .jpeg)
        let urls = (0..<10_000).map { URL(string: "https://images.example.com/photos/\($0).jpg")! }
        let keys = urls.map { CacheKey($0) }
        for key in keys { cache.memoryCache.setImage(image, forKey: key.identity) }
        let order = (0..<200_000).map { ($0 &* 7919) % urls.count }
        var found = 0
        let key = latencies(order.count) { index in
            if !CacheKey(urls[order[index]]).identity.isEmpty { found += 1 }
        }
        let lookup = latencies(order.count) { index in
            if cache.imageFromMemory(forKey: keys[order[index]]) != nil { found += 1 }
        }
        let delivery = latencies(order.count) { index in
            let index = order[index]
            let result = ImageLoadResult(
                image: image, data: nil, cacheType: .memory, url: urls[index], cacheKey: keys[index])
            if result.image != nil { found += 1 }
        }
        precondition(found == 3 * order.count)
        return [
            Row(name: "manager-hit-stage key (URL → CacheKey)", p50: key.0, p99: key.1, opsPerSecond: key.2),
            Row(name: "manager-hit-stage lookup (memory)", p50: lookup.0, p99: lookup.1, opsPerSecond: lookup.2),
            Row(
                name: "manager-hit-stage delivery (result)", p50: delivery.0, p99: delivery.1, opsPerSecond: delivery.2),
        ]
    }

    func disk(_ directory: URL) async -> [Row] {
        guard let cache = try? ImageCache(directory: directory, configuration: .init(disk: .init(sweepsAtOpen: false)))
        else {
            log("cannot create a cache in \(directory.path)")
            return []
        }
        // A JPEG of about 100 KB.
        let picture = DecodedImage(
            frames: [ImageFrame(bitmap: SyntheticImages.photo(width: 512, height: 384))], format: .jpeg)
        var data = (try? ImageCodersManager.shared.encode(picture, as: .jpeg, options: .init(quality: 0.9))) ?? Data()
        // pad (JPEG ignores bytes after EOI)
        if data.count < 100_000 { data.append(Data(count: 100_000 - data.count)) }
        let disk = cache.diskCache
        var rows: [Row] = []
        let count = 2000
        let keys = (0..<count).map { "https://images.example.com/large/\($0).jpg" }
        let store = latencies(count) { index in
            try? disk.store(data, forKey: CacheKey(keys[index]).identity, expiryDate: nil, http: nil)
        }
        if options.includes("cache-disk-store") {
            rows.append(Row(name: "cache-disk-store (100 KB)", p50: store.0, p99: store.1, opsPerSecond: store.2))
        }
        if options.includes("cache-disk-hit-read") {
            let read = latencies(count) { index in _ = disk.data(forKey: CacheKey(keys[index]).identity) }
            rows.append(Row(name: "cache-disk-hit-read (100 KB)", p50: read.0, p99: read.1, opsPerSecond: read.2))
        }
        if options.includes("cache-disk-hit-decode") {
            let decode = latencies(500) { index in
                cache.query(
                    CacheKey(keys[index]), cacheType: .disk, options: [.queryDiskDataSync, .skipMemoryPromotion]
                ) { result in
                    precondition((try? result.get().image) != nil)
                }
            }
            rows.append(
                Row(
                    name: "cache-disk-hit-decode (100 KB JPEG 512x384)", p50: decode.0, p99: decode.1,
                    opsPerSecond: decode.2))
        }
        if options.includes("manager-disk-hit") {
            // The default, asynchronous path: a job, the cache's IO queue, decode, delivery. The
            // context keeps disk hits out of memory so that every load reads the disk.
            let manager = ImageManager(cache: cache, loader: NoLoader())
            var context = ImageLoadContext()
            context.storeCacheType = .disk
            let urls = keys.map { URL(string: $0)! }
            let hit = await latencies(500) { index in
                let result = try? await manager.loadImage(urls[index], context: context)
                precondition(result?.cacheType == .disk && result?.image != nil)
            }
            rows.append(
                Row(name: "manager-disk-hit (100 KB JPEG 512x384)", p50: hit.0, p99: hit.1, opsPerSecond: hit.2))
        }
        return rows
    }

    func sweep(_ directory: URL) -> Row {
        let configuration = DiskCacheConfiguration(maxAge: 7 * 24 * 3600, maxSize: 0, sweepsAtOpen: false)
        guard let cache = try? DiskCache(directory: directory, configuration: configuration) else {
            return Row(name: "cache-sweep-100k", p50: .nan, p99: .nan, opsPerSecond: .nan)
        }
        log("creating 100 000 disk entries…")
        let payload = Data(count: 512)
        for index in 0..<100_000 { try? cache.store(payload, forKey: "https://e.example/\(index).png") }
        var durations: [Double] = []
        for _ in 0..<3 {
            let report = cache.removeExpired()
            durations.append(report.duration * 1e9)
        }
        durations.sort()
        return Row(
            name: "cache-sweep-100k (no deletions)", p50: durations[1], p99: durations[2],
            opsPerSecond: 100_000 / (durations[1] / 1e9))
    }
}

/// A loader that never loads: manager benchmarks must be answered by the cache.
private struct NoLoader: ImageLoading {
    func canLoad(_ url: URL) -> Bool { true }
    func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        fatalError("bench: the manager went to the loader for \(request.url)")
    }
}
