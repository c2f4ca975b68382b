import AsyncHTTPClient
import Foundation
import ImageKit
import NIOCore
import NIOSSL

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// netbench --http URL_PREFIX --https URL_PREFIX --count N [--runs R] [--tools a,b] [--concurrency 6,32] [--json]
// Downloads N files (0.bin … N-1.bin) from each prefix at concurrency 6 and 32 with ImageKit,
// the curl command line, URLSession and AsyncHTTPClient, R times each (9), the tools taking turns
// within every round so machine noise hits them alike, and prints the medians of images/s,
// MB/s and CPU seconds.

struct Options {
    var http = ""
    var https = ""
    var count = 1000
    var json = false
    var runs = 9
    var tools: Set<String> = ["imagekit", "curl-cli", "urlsession", "async-http-client", "pipeline"]
    var concurrencies = [6, 32]
    /// The directory nginx serves (the pipeline case writes its photos there).
    var www = ""
    /// Where the pipeline case keeps its disk caches (default: the temporary directory).
    var cacheRoot = FileManager.default.temporaryDirectory.path
}

// FoundationNetworking reads this when its first session is created: no certificate checks.
setenv("URLSessionCertificateAuthorityInfoFile", "INSECURE_SSL_NO_VERIFY", 1)

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst().makeIterator()
    while let argument = arguments.next() {
        switch argument {
        case "--http": options.http = arguments.next() ?? ""
        case "--https": options.https = arguments.next() ?? ""
        case "--count": options.count = Int(arguments.next() ?? "") ?? 1000
        case "--json": options.json = true
        case "--runs": options.runs = max(1, Int(arguments.next() ?? "") ?? 9)
        case "--tools": options.tools = Set((arguments.next() ?? "").split(separator: ",").map(String.init))
        case "--www": options.www = arguments.next() ?? ""
        case "--cache-root": options.cacheRoot = arguments.next() ?? options.cacheRoot
        case "--concurrency":
            options.concurrencies = (arguments.next() ?? "").split(separator: ",").compactMap { Int($0) }
        default: FileHandle.standardError.write(Data("netbench: unknown argument \(argument)\n".utf8)); exit(2)
        }
    }
    return options
}

let options = parseOptions()

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// CPU seconds of this process (and, for child processes, `RUSAGE_CHILDREN`).
func cpuSeconds(children: Bool = false) -> Double {
    var usage = rusage()
    getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
        usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

struct Measurement {
    var tool: String
    var proto: String
    var concurrency: Int
    var seconds: Double
    var bytes: Int
    var cpu: Double
    var failures: Int
}

/// Runs `count` downloads with at most `concurrency` in flight; `fetch` returns the byte count.
func runBounded(count: Int, concurrency: Int, fetch: @escaping @Sendable (Int) async -> Int?) async -> (Int, Int) {
    await withTaskGroup(of: Int?.self) { group in
        var next = 0
        var bytes = 0
        var failures = 0
        for _ in 0..<min(concurrency, count) {
            let index = next
            next += 1
            group.addTask { await fetch(index) }
        }
        while let result = await group.next() {
            if let result { bytes += result } else { failures += 1 }
            if next < count {
                let index = next
                next += 1
                group.addTask { await fetch(index) }
            }
        }
        return (bytes, failures)
    }
}

func measure(_ tool: String, _ proto: String, _ concurrency: Int, _ body: () async -> (Int, Int)) async -> Measurement {
    let cpu = cpuSeconds()
    let start = now()
    let (bytes, failures) = await body()
    return Measurement(
        tool: tool, proto: proto, concurrency: concurrency, seconds: now() - start, bytes: bytes,
        cpu: cpuSeconds() - cpu, failures: failures)
}

func imageKit(prefix: String, concurrency: Int) async -> (Int, Int) {
    let downloader = ImageDownloader(
        configuration: ImageDownloaderConfiguration(
            maxConcurrentDownloads: concurrency, allowsInvalidSSLCertificates: true, maxConnectionsPerHost: concurrency)
    )
    // The downloader queues internally: hand it everything at once.
    return await runBounded(count: options.count, concurrency: options.count) { index in
        try? await downloader.load(URL(string: "\(prefix)/\(index).bin")!).data.count
    }
}

func curlCLI(prefix: String, concurrency: Int, http2: Bool) -> (Int, Int, Double) {
    let list = FileManager.default.temporaryDirectory.appendingPathComponent("netbench-\(UUID().uuidString).txt")
    let lines = (0..<options.count).map { "url = \"\(prefix)/\($0).bin\"\noutput = \"/dev/null\"" }.joined(
        separator: "\n")
    try? lines.write(to: list, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: list) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = [
        "--silent", "--no-progress-meter", "--insecure", "--parallel", "--parallel-max", String(concurrency),
        http2 ? "--http2" : "--http1.1",
        "--write-out", "%{size_download}\n", "--config", list.path,
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    let cpu = cpuSeconds(children: true)
    try? process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let sizes = String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { Int($0) }
    return (sizes.reduce(0, +), options.count - sizes.filter { $0 > 0 }.count, cpuSeconds(children: true) - cpu)
}

final class InsecureDelegate: NSObject, URLSessionDelegate {}

func urlSession(prefix: String, concurrency: Int) async -> (Int, Int) {
    // FoundationNetworking reads this variable to turn certificate verification off.
    setenv("URLSessionCertificateAuthorityInfoFile", "INSECURE_SSL_NO_VERIFY", 1)
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = concurrency
    let session = URLSession(configuration: configuration)
    defer { session.finishTasksAndInvalidate() }
    return await runBounded(count: options.count, concurrency: concurrency) { index in
        guard let (data, response) = try? await session.data(from: URL(string: "\(prefix)/\(index).bin")!),
            (response as? HTTPURLResponse)?.statusCode == 200
        else { return nil }
        return data.count
    }
}

func asyncHTTPClient(prefix: String, concurrency: Int) async -> (Int, Int) {
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.certificateVerification = .none
    var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
    configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = concurrency
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    let result = await runBounded(count: options.count, concurrency: concurrency) { index in
        do {
            let response = try await client.execute(
                HTTPClientRequest(url: "\(prefix)/\(index).bin"), timeout: .seconds(30))
            guard response.status == .ok else { return nil }
            return try await response.body.collect(upTo: 1 << 24).readableBytes
        } catch {
            return nil
        }
    }
    try? await client.shutdown()
    return result
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func runOnce(_ tool: String, _ proto: String, _ prefix: String, _ concurrency: Int) async -> Measurement {
    switch tool {
    case "imagekit":
        return await measure(tool, proto, concurrency) { await imageKit(prefix: prefix, concurrency: concurrency) }
    case "curl-cli":
        let start = now()
        let (bytes, failures, cpu) = curlCLI(prefix: prefix, concurrency: concurrency, http2: proto != "http/1.1")
        return Measurement(
            tool: tool, proto: proto, concurrency: concurrency, seconds: now() - start, bytes: bytes, cpu: cpu,
            failures: failures)
    case "urlsession":
        return await measure(tool, proto, concurrency) { await urlSession(prefix: prefix, concurrency: concurrency) }
    default:
        return await measure(tool, proto, concurrency) {
            await asyncHTTPClient(prefix: prefix, concurrency: concurrency)
        }
    }
}

let toolOrder = ["imagekit", "curl-cli", "urlsession", "async-http-client"].filter { options.tools.contains($0) }
var results: [Measurement] = []
for (proto, prefix) in [("http/1.1", options.http), ("https+h2", options.https)] where !prefix.isEmpty {
    for concurrency in options.concurrencies {
        // Warm-up: page cache, nginx, lazily loaded libraries.
        for tool in toolOrder where tool != "urlsession" || proto == "http/1.1" {
            _ = await runOnce(tool, proto, prefix, concurrency)
        }
        var rounds: [String: [Measurement]] = [:]
        for _ in 0..<options.runs {
            for tool in toolOrder {
                // FoundationNetworking cannot skip certificate checks here: one failing round
                // says so without spending minutes on timeouts.
                if tool == "urlsession", proto != "http/1.1", let first = rounds[tool]?.first, first.failures > 0 {
                    continue
                }
                rounds[tool, default: []].append(await runOnce(tool, proto, prefix, concurrency))
            }
        }
        for tool in toolOrder {
            guard let runs = rounds[tool], let first = runs.first else { continue }
            results.append(
                Measurement(
                    tool: tool, proto: proto, concurrency: concurrency, seconds: median(runs.map(\.seconds)),
                    bytes: first.bytes, cpu: median(runs.map(\.cpu)), failures: runs.map(\.failures).max() ?? 0))
        }
    }
}

var pipelineResult: Pipeline.Result?
if options.tools.contains("pipeline"), !options.www.isEmpty, !options.http.isEmpty {
    do {
        pipelineResult = try await Pipeline(
            prefix: options.http, www: options.www, count: options.count, runs: options.runs,
            cacheRoot: options.cacheRoot
        ).run()
    } catch {
        FileHandle.standardError.write(Data("netbench: pipeline case failed: \(error)\n".utf8))
        exit(1)
    }
}

func padded(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

if options.json {
    for m in results {
        let object: [String: Any] = [
            "tool": m.tool, "protocol": m.proto, "concurrency": m.concurrency,
            "images_per_s": Double(options.count) / m.seconds, "mb_per_s": Double(m.bytes) / 1e6 / m.seconds,
            "cpu_s": m.cpu, "failures": m.failures, "runs": options.runs,
        ]
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }
} else {
    print("Downloads of \(options.count) files (10–200 KB) from nginx on loopback, medians of \(options.runs) rounds")
    print("tool               protocol  conc  images/s     MB/s   CPU s  vs curl  failures")
    for m in results {
        let curl = results.first { $0.tool == "curl-cli" && $0.proto == m.proto && $0.concurrency == m.concurrency }
        let ratio = curl.map { $0.seconds / m.seconds } ?? .nan
        print(
            padded(m.tool, 17) + "  " + padded(m.proto, 8)
                + String(
                    format: "  %4d  %8.0f  %7.1f  %6.3f  %6.2fx  %d", m.concurrency,
                    Double(options.count) / m.seconds, Double(m.bytes) / 1e6 / m.seconds, m.cpu, ratio, m.failures))
    }
}

if let pipeline = pipelineResult {
    if options.json {
        let object: [String: Any] = [
            "case": "pipeline", "images_per_s": pipeline.imagesPerSecond,
            "download_only_per_s": pipeline.downloadOnly, "decode_only_per_s": pipeline.decodeOnly,
            "ratio": pipeline.ratio, "cpu_ms_per_image": pipeline.cpuPerImage.pipeline,
            "download_only_cpu_ms_per_image": pipeline.cpuPerImage.download,
            "decode_only_cpu_ms_per_image": pipeline.cpuPerImage.decode,
            "memory_only_per_s": pipeline.memoryOnly, "memory_only_ratio": pipeline.memoryOnlyRatio,
            "memory_only_cpu_ms_per_image": pipeline.memoryOnlyCPUPerImage,
        ]
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    } else {
        print("")
        print(
            "Pipeline: \(options.count) photos (50–300 KB JPEG) loaded cold through ImageManager as 256 px thumbnails over"
        )
        print("HTTP/1.1 (download, decode, store in \(options.cacheRoot)), medians of \(options.runs) rounds;")
        print("ratio = pipeline / min(download-only, decode-only)")
        print(
            String(
                format: "pipeline %.0f images/s   download-only %.0f/s   decode-only %.0f/s (%d cores)   ratio %.2f",
                pipeline.imagesPerSecond, pipeline.downloadOnly, pipeline.decodeOnly,
                ProcessInfo.processInfo.activeProcessorCount, pipeline.ratio))
        print(
            String(
                format: "CPU per image: pipeline %.2f ms   download-only %.2f ms   decode-only %.2f ms",
                pipeline.cpuPerImage.pipeline, pipeline.cpuPerImage.download, pipeline.cpuPerImage.decode))
        print(
            String(
                format: "storing nothing on disk: %.0f images/s (ratio %.2f), CPU per image %.2f ms",
                pipeline.memoryOnly, pipeline.memoryOnlyRatio, pipeline.memoryOnlyCPUPerImage))
    }
}
