import CoreMetrics
import Foundation
import ImageKit

/// Where a response's bytes came from, cheapest first: the `tier` label of
/// `imagekit_cache_hits_total` and the access log's `cache` field.
public enum ImageServiceCacheTier: String, Sendable {
    /// An encoded result held in memory.
    case resultMemory = "result_memory"
    /// An encoded result read from the result cache on disk.
    case resultDisk = "result_disk"
    /// Processed now, from a source found in the source cache on disk.
    case sourceDisk = "source_disk"
    /// Processed now, from a source fetched from the origin.
    case origin
}

/// The service's metrics through swift-metrics (`imagekit serve` exports them with
/// swift-prometheus at `/metrics`). Names and labels:
///
/// | Name | Type | Labels |
/// |---|---|---|
/// | `imagekit_requests_total` | counter | `grammar` (thumbor, imgproxy, none), `status` |
/// | `imagekit_request_duration_seconds` | histogram | `grammar` |
/// | `imagekit_stage_duration_seconds` | histogram | `stage` (queue, fetch, decode, transform, encode) |
/// | `imagekit_cache_hits_total` | counter | `tier` (result_memory, result_disk, source_disk, origin) |
/// | `imagekit_origin_bytes_total` | counter | |
/// | `imagekit_purges_total` | counter | |
/// | `imagekit_requests_in_flight` | gauge | |
/// | `imagekit_queue_length` | gauge | |
/// | `imagekit_process_resident_memory_bytes` | gauge | |
///
/// The loader's own `imagekit_*` metrics (downloads, retries, disk reads) are emitted beside them.
struct ServiceMetrics: Sendable {
    private let factory: any MetricsFactory
    private let queueWait: CoreMetrics.Timer
    private let fetch: CoreMetrics.Timer
    private let decode: CoreMetrics.Timer
    private let transform: CoreMetrics.Timer
    private let encode: CoreMetrics.Timer
    private let originBytes: Counter
    private let purges: Counter
    private let inFlightGauge: Gauge
    private let queueGauge: Gauge
    private let residentGauge: Gauge
    private let inFlight = Locked(0)
    /// Labelled handles made once: a factory lookup per request costs more than the count.
    private let requestHandles = Locked<[String: (Counter, CoreMetrics.Timer)]>([:])
    private let tierCounters: [ImageServiceCacheTier: Counter]

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        func stage(_ name: String) -> CoreMetrics.Timer {
            CoreMetrics.Timer(label: "imagekit_stage_duration_seconds", dimensions: [("stage", name)], factory: factory)
        }
        queueWait = stage("queue")
        fetch = stage("fetch")
        decode = stage("decode")
        transform = stage("transform")
        encode = stage("encode")
        originBytes = Counter(label: "imagekit_origin_bytes_total", factory: factory)
        purges = Counter(label: "imagekit_purges_total", factory: factory)
        inFlightGauge = Gauge(label: "imagekit_requests_in_flight", factory: factory)
        queueGauge = Gauge(label: "imagekit_queue_length", factory: factory)
        residentGauge = Gauge(label: "imagekit_process_resident_memory_bytes", factory: factory)
        var tiers: [ImageServiceCacheTier: Counter] = [:]
        for tier in [ImageServiceCacheTier.resultMemory, .resultDisk, .sourceDisk, .origin] {
            tiers[tier] = Counter(
                label: "imagekit_cache_hits_total", dimensions: [("tier", tier.rawValue)], factory: factory)
        }
        tierCounters = tiers
    }

    func requestStarted() {
        inFlightGauge.record(
            inFlight.withLock { count in
                count += 1
                return count
            })
    }

    func requestFinished(grammar: String, status: Int, duration: Duration) {
        inFlightGauge.record(
            inFlight.withLock { count in
                count -= 1
                return count
            })
        let key = grammar + " " + String(status)
        let factory = self.factory
        let (counter, timer) = requestHandles.withLock { handles in
            if let made = handles[key] { return made }
            let made = (
                Counter(
                    label: "imagekit_requests_total", dimensions: [("grammar", grammar), ("status", String(status))],
                    factory: factory),
                CoreMetrics.Timer(
                    label: "imagekit_request_duration_seconds", dimensions: [("grammar", grammar)], factory: factory)
            )
            handles[key] = made
            return made
        }
        counter.increment()
        timer.recordNanoseconds(duration.nanoseconds)
    }

    func served(from tier: ImageServiceCacheTier) {
        tierCounters[tier]?.increment()
    }

    /// One accepted `POST /admin/purge`.
    func purged() { purges.increment() }

    func fetched(bytes: Int, duration: Duration, fromOrigin: Bool) {
        fetch.recordNanoseconds(duration.nanoseconds)
        if fromOrigin { originBytes.increment(by: bytes) }
    }

    func waited(_ duration: Duration) { queueWait.recordNanoseconds(duration.nanoseconds) }

    func queueLength(_ count: Int) { queueGauge.record(count) }

    func residentMemory() {
        if let bytes = Self.residentBytes() { residentGauge.record(bytes) }
    }

    /// The process's resident set from `/proc/self/statm` (nil where there is none).
    static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func processed(_ timings: ProcessingTimings) {
        decode.recordNanoseconds(timings.decode.nanoseconds)
        transform.recordNanoseconds(timings.transform.nanoseconds)
        encode.recordNanoseconds(timings.encode.nanoseconds)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled + attoseconds / 1_000_000_000
    }
}
