import CoreMetrics
import Foundation
import Logging

/// Where ImageKit reports what it does: a swift-log `Logger` and a swift-metrics factory.
///
/// Both are the server ecosystem's own libraries, so an application's backends (a JSON log
/// handler, swift-prometheus, StatsD …) receive ImageKit's logs and metrics with no glue. By
/// default the logger is `Logger(label: "ImageKit")` at the application's bootstrap level
/// (nothing below `info` is printed unless asked) and the metrics go to whatever
/// `MetricsSystem.bootstrap` installed: a no-op when the application installed nothing.
///
/// Logs carry `imagekit.url`, `imagekit.cache_key` and `imagekit.job` metadata: `debug` for
/// each stage of a load, `warning` for failed cache stores and retried downloads; the memory
/// hit path logs nothing. Metrics, all prefixed `imagekit_`:
///
/// | name | kind | dimensions |
/// |---|---|---|
/// | `imagekit_loads_total` | counter | `outcome` (success, failure, cancelled), `tier` (memory, disk, network, none) |
/// | `imagekit_errors_total` | counter | `code` (an ``ImageError/Code``) |
/// | `imagekit_downloads_total` | counter | `outcome` (success, failure) |
/// | `imagekit_download_bytes_total` | counter | |
/// | `imagekit_download_retries_total` | counter | |
/// | `imagekit_memory_cache_evictions_total` | counter | |
/// | `imagekit_queue_wait_seconds`, `imagekit_download_seconds`, `imagekit_decode_seconds`, `imagekit_transform_seconds`, `imagekit_disk_read_seconds`, `imagekit_disk_write_seconds` | timer | |
/// | `imagekit_memory_cache_cost_bytes`, `imagekit_disk_cache_size_bytes` | gauge | |
///
/// ```swift
/// LoggingSystem.bootstrap(StreamLogHandler.standardError)
/// MetricsSystem.bootstrap(PrometheusMetricsFactory())
/// var logger = Logger(label: "images")
/// logger.logLevel = .debug
/// let manager = ImageManager(configuration: .init(telemetry: ImageKitTelemetry(logger: logger)))
/// ```
public struct ImageKitTelemetry: Sendable {
    /// Where logs go; its level decides what is logged (`debug` shows every stage).
    public var logger: Logger
    /// nil: the factory `MetricsSystem.bootstrap` installed (read when the component is made).
    public var metricsFactory: (any MetricsFactory)?

    /// A telemetry with a logger and, optionally, a metrics factory other than the bootstrapped one.
    public init(logger: Logger = Logger(label: "ImageKit"), metricsFactory: (any MetricsFactory)? = nil) {
        self.logger = logger
        self.metricsFactory = metricsFactory
    }
}

/// The metric objects one component reports to, made once (a metric's creation looks up the
/// factory and may allocate; its use is a call on the handler).
final class ImageKitMetrics: Sendable {
    let factory: any MetricsFactory
    let memoryHits: Counter
    let diskHits: Counter
    let networkLoads: Counter
    let emptyLoads: Counter
    let failedLoads: Counter
    let cancelledLoads: Counter
    let downloadsSucceeded: Counter
    let downloadsFailed: Counter
    let downloadBytes: Counter
    let downloadRetries: Counter
    let evictions: Counter
    let queueWait: CoreMetrics.Timer
    let download: CoreMetrics.Timer
    let decode: CoreMetrics.Timer
    let transform: CoreMetrics.Timer
    let diskRead: CoreMetrics.Timer
    let diskWrite: CoreMetrics.Timer
    let memoryCost: Gauge
    let diskSize: Gauge
    private let errors = Locked<[String: Counter]>([:])

    init(factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        func loads(_ outcome: String, _ tier: String) -> Counter {
            Counter(
                label: "imagekit_loads_total", dimensions: [("outcome", outcome), ("tier", tier)], factory: factory)
        }
        memoryHits = loads("success", "memory")
        diskHits = loads("success", "disk")
        networkLoads = loads("success", "network")
        emptyLoads = loads("success", "none")
        failedLoads = loads("failure", "none")
        cancelledLoads = loads("cancelled", "none")
        downloadsSucceeded = Counter(
            label: "imagekit_downloads_total", dimensions: [("outcome", "success")], factory: factory)
        downloadsFailed = Counter(
            label: "imagekit_downloads_total", dimensions: [("outcome", "failure")], factory: factory)
        downloadBytes = Counter(label: "imagekit_download_bytes_total", factory: factory)
        downloadRetries = Counter(label: "imagekit_download_retries_total", factory: factory)
        evictions = Counter(label: "imagekit_memory_cache_evictions_total", factory: factory)
        queueWait = CoreMetrics.Timer(label: "imagekit_queue_wait_seconds", factory: factory)
        download = CoreMetrics.Timer(label: "imagekit_download_seconds", factory: factory)
        decode = CoreMetrics.Timer(label: "imagekit_decode_seconds", factory: factory)
        transform = CoreMetrics.Timer(label: "imagekit_transform_seconds", factory: factory)
        diskRead = CoreMetrics.Timer(label: "imagekit_disk_read_seconds", factory: factory)
        diskWrite = CoreMetrics.Timer(label: "imagekit_disk_write_seconds", factory: factory)
        memoryCost = Gauge(label: "imagekit_memory_cache_cost_bytes", factory: factory)
        diskSize = Gauge(label: "imagekit_disk_cache_size_bytes", factory: factory)
    }

    /// Counts an error by its code.
    func count(_ error: ImageError) {
        let counter = errors.withLock { errors in
            if let counter = errors[error.code.rawValue] { return counter }
            let counter = Counter(
                label: "imagekit_errors_total", dimensions: [("code", error.code.rawValue)], factory: factory)
            errors[error.code.rawValue] = counter
            return counter
        }
        counter.increment()
    }
}

extension CoreMetrics.Timer {
    /// Records `seconds` (a `TimeInterval`).
    func record(seconds: TimeInterval) {
        recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }
}
