#if Serve
import ArgumentParser
import CoreMetrics
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImageKit
import ImageKitServer
import Logging
import Prometheus

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve thumbor and imgproxy image URLs over HTTP (an image service in front of a CDN).",
        discussion: """
            Endpoints: GET/HEAD /healthz (200 serving, 503 draining; also on --health-port, for probes), \
            GET /metrics (Prometheus text), and \
            every other path as a thumbor URL (/unsafe/… or /SIGNATURE/…, meta/ for JSON facts) or an imgproxy \
            URL (/insecure/…, /_/… or /SIGNATURE/…, /info/… for JSON facts). Errors are JSON: \
            {"error": code, "message": …}. SIGTERM or SIGINT: /healthz turns 503, the listener closes, requests \
            in flight finish within --grace seconds, then the process exits 0.

            Every option also reads IMAGEKIT_SERVE_<NAME> (e.g. IMAGEKIT_SERVE_THUMBOR_KEY; lists comma-separated, \
            switches true/false); a flag on the command line wins. Without a key and without --allow-unsafe \
            the service does not start.
            """
    )

    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on (0: any free port; the startup line tells which).") var port = 8080
    @Option(help: "Connections the kernel holds for the listener before it accepts them (a burst behind a proxy).")
    var backlog = 1024
    @Option(
        help: """
            A second port, on --host, that answers only GET/HEAD /healthz, accepted and answered apart \
            from image requests (a probe there never waits behind a burst); 0: any free port.
            """)
    var healthPort: Int?
    @Option(
        name: .customLong("key"),
        help: "imgproxy signing key (hex); repeatable with --salt, in pairs: the first signs, any verifies.")
    var keys: [String] = []
    @Option(name: .customLong("salt"), help: "imgproxy signing salt (hex), one per --key.") var salts: [String] = []
    @Option(name: .customLong("thumbor-key"), help: "thumbor SECURITY_KEY; repeatable (rotation: any verifies).")
    var thumborKeys: [String] = []
    @Flag(help: "Also accept unsigned URLs (thumbor /unsafe/, imgproxy /insecure/ and /_/).") var allowUnsafe = false
    @Option(
        name: .customLong("allow-source"),
        help: "Only these source hosts (glob, e.g. *.example.com); repeatable. Default: any.")
    var allowedSources: [String] = []
    @Option(
        name: .customLong("allow-address"),
        help:
            "A CIDR exempt from the private-address guard (loopback, private, link-local, multicast and reserved addresses are refused after DNS and on every redirect); repeatable. Default: none."
    )
    var allowedAddresses: [String] = []
    @Option(
        name: .customLong("s3-bucket"),
        help:
            "Serve s3://BUCKET/KEY sources from this bucket; repeatable (the allow-list). Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or IMAGEKIT_SERVE_S3_* of the same names."
    )
    var s3Buckets: [String] = []
    @Option(
        name: .customLong("s3-endpoint"),
        help:
            "An S3-compatible endpoint (MinIO, Ceph RGW, R2), e.g. http://10.0.0.5:9000; its address passes the private-address guard (--allow-address for a private store)."
    )
    var s3Endpoint: String?
    @Option(
        name: .customLong("s3-region"),
        help: "The region S3 requests are signed for (default: AWS_REGION or us-east-1).")
    var s3Region: String?
    @Flag(
        name: .customLong("s3-path-style"), inversion: .prefixedNo,
        help: "Path-style S3 addressing, ENDPOINT/BUCKET/KEY (default: on with --s3-endpoint, off for AWS).")
    var s3PathStyle: Bool?
    @Option(help: "Serve local:///PATH sources from files under this directory (no path leaves it).")
    var localRoot: String?
    @Option(
        help:
            "Enables POST /admin/purge with Authorization: Bearer KEY (forgets a source and its results on this node). Default: no admin route."
    )
    var adminKey: String?
    @Flag(
        name: .customLong("source-tags"),
        help: "Send Surrogate-Key and Cache-Tag naming each image's source, for a CDN's purge by tag (default: off).")
    var sourceTags = false
    @Option(
        name: .customLong("purge-notify"),
        help:
            "A front cache's purge location (the fleet's nginx: http://127.0.0.1:8080/imagekit-purge-key), told to drop a purged source's keys; repeatable."
    )
    var purgeNotify: [String] = []
    @Option(help: "Cache sources and results on disk here (default: memory only).") var cacheDir: String?
    @Option(help: "Megabytes of encoded results kept in memory.") var memoryLimit = 64
    @Option(
        help:
            "Megabytes of disk for the cache (sources 3/4, results 1/4). Default: a tenth of the free space, 64 MiB to 1 GiB each."
    )
    var diskLimit: Int?
    @Option(help: "The largest source accepted, in bytes (larger: 413).") var maxSourceBytes = 64 << 20
    @Option(help: "The most pixels a source may have (more: 422).") var maxPixels = 50_000_000
    @Option(
        help:
            "Seconds to fetch a source: one deadline for connection, redirects, body and retries together (past it: 504)."
    ) var timeout: Double = 10
    @Option(help: "Redirects followed at most (each hop passes the address guard).") var maxRedirects = 10
    @Option(help: "Images processed at once (default: the core count).") var workers: Int?
    @Option(
        help:
            "Requests waiting for a worker at most (default: 128), counted from before their source is fetched; beyond: 503 with Retry-After."
    )
    var queue: Int?
    @Option(help: "Seconds requests in flight may take to finish after SIGTERM.") var grace: Double = 10
    @Option(help: "Cache-Control max-age of images, in seconds (thumbor max_age() and imgproxy exp lower it).")
    var maxAge = 365 * 86_400
    @Option(help: "Seconds a result is served from the result cache before its source is looked at again.")
    var resultTtl: Double = 3600
    @Option(help: "Seconds into a video source its frame is taken at when a URL does not say (vts, still(N)).")
    var videoThumbnailSecond: Double = 1
    @Flag(
        name: .customLong("client-hints"),
        help:
            "imgproxy URLs without a width or DPR take them from client hints (Sec-CH-DPR, Sec-CH-Width, Sec-CH-Viewport-Width; DPR, Width); responses say Vary and Accept-CH. Hints are not signed."
    )
    var clientHints = false
    @Flag(
        name: .customLong("best-format"),
        help:
            "URLs that ask no format get the best one: each format the client accepts is tried and the smallest answer kept (as f:best, format(best))."
    )
    var bestFormat = false
    @Option(
        name: .customLong("autoquality"),
        help: ArgumentHelp(
            "Choose each answer's quality unless its URL fixes one: ssimulacra2[:TARGET] (default 70), dssim[:TARGET] (0.02) or size:BYTES, then :MIN:MAX qualities and :ALLOWED_ERROR (imgproxy's aq spelling).",
            valueName: "method[:target[:min[:max[:error]]]]"))
    var autoquality: String?
    @Option(
        name: .customLong("autoquality-format-min"),
        help: "Autoquality's lowest quality by format, e.g. avif=40,webp=55.")
    var autoqualityFormatMin: String?
    @Option(
        name: .customLong("autoquality-format-max"), help: "Autoquality's highest quality by format, e.g. avif=70.")
    var autoqualityFormatMax: String?
    @Option(
        name: .customLong("autoquality-max-resolution"),
        help: "Answers of more pixels than this keep the fixed quality (0: no limit).")
    var autoqualityMaxResolution: Int = 4_000_000
    @Option(
        name: .customLong("preset"),
        help: "An imgproxy preset NAME=OPTIONS (e.g. thumb=rs:fit:256:256/q:80); repeatable.")
    var presets: [String] = []
    @Flag(
        inversion: .prefixedNo, help: "Answer WebP when Accept lists image/webp and no format is asked (default: on).")
    var autoWebp: Bool?
    @Flag(
        inversion: .prefixedNo,
        help: "Answer AVIF when Accept lists image/avif and no format is asked (default: off; ~10× the CPU).")
    var autoAvif: Bool?
    @Option(
        help: """
            Send traces (OTLP/HTTP) to this collector, e.g. http://127.0.0.1:4318 (default: \
            OTEL_EXPORTER_OTLP_ENDPOINT; neither set: no traces).
            """)
    var otelEndpoint: String?
    @Option(help: "trace, debug, info, notice, warning or error.") var logLevel = "info"
    @Option(help: "text or json (one object per line).") var logFormat = "text"

    func validate() throws {
        guard !(keys.isEmpty && thumborKeys.isEmpty) || allowUnsafe else {
            throw ValidationError(
                "no signing key: give --key and --salt (imgproxy), --thumbor-key (thumbor), or --allow-unsafe to serve unsigned URLs"
            )
        }
        guard keys.count == salts.count else { throw ValidationError("give one --salt for each --key") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level: '\(logLevel)' is not a level")
        }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format is text or json") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        for cidr in allowedAddresses where IPNetwork(cidr) == nil {
            throw ValidationError("--allow-address: '\(cidr)' is not an address or CIDR")
        }
        if !s3Buckets.isEmpty {
            guard s3Access(environment: ProcessInfo.processInfo.environment) != nil else {
                throw ValidationError(
                    "--s3-bucket: no S3 credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or IMAGEKIT_SERVE_S3_ACCESS_KEY_ID and IMAGEKIT_SERVE_S3_SECRET_ACCESS_KEY)"
                )
            }
            for bucket in s3Buckets where !S3Access.isValidBucketName(bucket) {
                throw ValidationError("--s3-bucket: '\(bucket)' is not a bucket name")
            }
        }
        if let s3Endpoint {
            guard let url = URL(string: s3Endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host != nil
            else { throw ValidationError("--s3-endpoint: '\(s3Endpoint)' is not an http(s) URL") }
        }
        if let otelEndpoint {
            guard let url = URL(string: otelEndpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host != nil
            else { throw ValidationError("--otel-endpoint: '\(otelEndpoint)' is not an http(s) URL") }
        }
        for url in purgeNotify {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                parsed.host != nil
            else { throw ValidationError("--purge-notify: '\(url)' is not an http(s) URL") }
        }
        if let localRoot {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: localRoot, isDirectory: &isDirectory), isDirectory.boolValue
            else { throw ValidationError("--local-root: '\(localRoot)' is not a directory") }
        }
        for preset in presets where !preset.contains("=") {
            throw ValidationError("--preset: '\(preset)' is not NAME=OPTIONS")
        }
        if backlog < 1 { throw ValidationError("--backlog must be at least 1") }
        do {
            if let autoquality { _ = try AutoQualityDefaults(autoquality) }
            if let autoqualityFormatMin { _ = try AutoQualityDefaults.formatQualities(autoqualityFormatMin) }
            if let autoqualityFormatMax { _ = try AutoQualityDefaults.formatQualities(autoqualityFormatMax) }
        } catch {
            throw ValidationError(error.message)
        }
        if let healthPort, !(0...65_535).contains(healthPort) || (healthPort == port && port != 0) {
            throw ValidationError("--health-port must be a port (0-65535) other than --port")
        }
        if let workers, workers < 1 { throw ValidationError("--workers must be at least 1") }
        if let queue, queue < 0 { throw ValidationError("--queue must not be negative") }
        guard memoryLimit >= 0, (diskLimit ?? 1) > 0, maxSourceBytes > 0, maxPixels > 0, timeout > 0, maxRedirects >= 0,
            grace >= 0, maxAge >= 0,
            resultTtl >= 0, videoThumbnailSecond >= 0, videoThumbnailSecond.isFinite
        else {
            throw ValidationError("sizes, limits and durations must be positive")
        }
    }

    func serviceConfiguration() -> ImageServiceConfiguration {
        var configuration = ImageServiceConfiguration()
        configuration.thumborKeys = thumborKeys
        configuration.imgproxyKeys = zip(keys, salts).map { (key: $0, salt: $1) }
        configuration.allowsUnsafe = allowUnsafe
        configuration.allowedSources = allowedSources
        configuration.allowedNetworks = allowedAddresses
        if !s3Buckets.isEmpty { configuration.s3 = s3Access(environment: ProcessInfo.processInfo.environment) }
        configuration.adminKey = adminKey
        configuration.sendsSourceTags = sourceTags
        configuration.purgeNotify = purgeNotify.compactMap(URL.init(string:))
        configuration.localRoot = localRoot.map { URL(fileURLWithPath: $0, isDirectory: true) }
        configuration.cacheDirectory = cacheDir.map { URL(fileURLWithPath: $0, isDirectory: true) }
        configuration.resultMemoryBytes = memoryLimit << 20
        configuration.diskLimitBytes = diskLimit.map { $0 << 20 }
        configuration.maxSourceBytes = maxSourceBytes
        configuration.maxPixels = maxPixels
        configuration.timeout = timeout
        configuration.maxRedirects = maxRedirects
        if let workers { configuration.workers = workers }
        if let queue { configuration.queueLimit = queue }
        configuration.maxAge = maxAge
        configuration.resultTimeToLive = resultTtl
        configuration.videoThumbnailSecond = videoThumbnailSecond
        configuration.clientHints = clientHints
        configuration.bestFormatByDefault = bestFormat
        // validate() has read these already.
        if let autoquality, let defaults = try? AutoQualityDefaults(autoquality) {
            configuration.autoQuality = defaults
        }
        if let autoqualityFormatMin, let qualities = try? AutoQualityDefaults.formatQualities(autoqualityFormatMin) {
            configuration.autoQuality.formatMinQuality = qualities
        }
        if let autoqualityFormatMax, let qualities = try? AutoQualityDefaults.formatQualities(autoqualityFormatMax) {
            configuration.autoQuality.formatMaxQuality = qualities
        }
        configuration.autoQuality.maxResolution = autoqualityMaxResolution
        for preset in presets {
            let parts = preset.split(separator: "=", maxSplits: 1)
            configuration.presets[String(parts[0])] =
                parts.count > 1 ? parts[1].split(separator: "/").map(String.init) : []
        }
        if let autoWebp { configuration.autoWebP = autoWebp }
        if let autoAvif { configuration.autoAVIF = autoAvif }
        return configuration
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            var handler = StandardOutputLogHandler(label: label, format: json ? .json : .text)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
        ]
        .map { Duration.milliseconds(Int64($0 * 1000 * 1000)) / 1000 }
        MetricsSystem.bootstrap(factory)
        // Prometheus's convention for what is running: a gauge of 1 whose labels say it.
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                metricName: "imagekit_build_info", unitName: "",
                helpText: "The imagekit build serving: its version and the commit it was built from"),
            labels: [("version", ImageKit.version), ("commit", ImageKit.buildCommit ?? "unknown")]
        ).set(to: 1)

        let configuration = serviceConfiguration()
        let service: ImageService
        do {
            service = try ImageService(configuration: configuration)
        } catch {
            throw ValidationError(error.message)
        }
        var grammars: [String] = []
        if !configuration.thumborKeys.isEmpty { grammars.append("thumbor (signed)") }
        if !configuration.imgproxyKeys.isEmpty { grammars.append("imgproxy (signed)") }
        if configuration.allowsUnsafe { grammars.append("unsigned thumbor and imgproxy") }
        let banner =
            "grammars: \(grammars.joined(separator: ", ")); cache: \(cacheDir ?? "none (memory only)"); "
            + "workers: \(configuration.workers), queue: \(configuration.queueLimit)"
        var server = ImageServer(
            service: service, host: host, port: port, backlog: backlog, gracePeriod: .milliseconds(Int64(grace * 1000)),
            registry: registry, logger: Logger(label: "imagekit.serve"), accessLog: Logger(label: "imagekit.access"),
            healthPort: healthPort)
        if let tracing = try traceExporter(environment: ProcessInfo.processInfo.environment) {
            server.companions.append(tracing)
        }
        let outcome = Locked<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let healthListening = Locked<Int?>(nil)
                try await server.run(
                    onStarted: { host, port in
                        let health =
                            healthListening.withLock { $0 }.map { "; health: http://\(host):\($0)/healthz" } ?? ""
                        print("imagekit serve: listening on http://\(host):\(port)\(health); " + banner)
                        fflush(nil)
                    },
                    onHealthListening: { port in healthListening.withLock { $0 = port } })
            } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) {
            throw ValidationError("the server stopped: \(error)")
        }
    }

    /// S3 access for `--s3-bucket`: credentials from the environment (`IMAGEKIT_SERVE_S3_*` over
    /// `AWS_*`), the region from `--s3-region` over both.
    func s3Access(environment: [String: String]) -> S3Access? {
        guard
            var access = S3Access.fromEnvironment(
                environment, prefix: "IMAGEKIT_SERVE_S3_", endpoint: s3Endpoint.flatMap(URL.init(string:)),
                usesPathStyle: s3PathStyle, buckets: Set(s3Buckets))
        else { return nil }
        if let s3Region { access.region = s3Region }
        return access
    }
}
#endif
