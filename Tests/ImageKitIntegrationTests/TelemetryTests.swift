import Foundation
import Logging
import MetricsTestKit
import XCTest

@testable import ImageKit

/// Logs and metrics of known loads, through swift-metrics' TestMetrics and a capturing swift-log
/// handler given to each component (no process-wide bootstrap, so other tests are unaffected).
final class TelemetryTests: XCTestCase {
    /// Keeps every log record.
    struct CapturingLogHandler: LogHandler {
        final class Store: Sendable {
            let records = Locked<[(Logger.Level, String, Logger.Metadata)]>([])
        }
        let store: Store
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            store.records.withLock {
                $0.append((event.level, event.message.description, metadata.merging(event.metadata ?? [:]) { $1 }))
            }
        }
    }

    func testAKnownLoadReportsItsNumbers() async throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let png = ServerGradeTests.png(50, size: 32)
        server.route("/a.png", .init(body: png))
        let flaky = Locked(0)
        server.route("/flaky.png") { _ in
            flaky.withLock {
                $0 += 1; return $0
            } == 1 ? .init(status: .serviceUnavailable) : .init(body: png)
        }
        let metrics = TestMetrics()
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CapturingLogHandler(store: store) }
        let telemetry = ImageKitTelemetry(logger: logger, metricsFactory: metrics)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("telemetry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var cacheConfiguration = ImageCacheConfiguration(disk: .init(sweepsAtOpen: false))
        cacheConfiguration.telemetry = telemetry
        cacheConfiguration.memory = .init(costLimit: 32 * 32 * 4 * 10, maxEntryCostFraction: 1)  // room for 10 images
        let cache = try ImageCache(directory: directory, configuration: cacheConfiguration)
        var downloads = ImageDownloaderConfiguration(retryPolicy: ImageRetryPolicy(maxRetries: 1, baseDelay: 0.01))
        downloads.telemetry = telemetry
        var managerConfiguration = ImageManagerConfiguration()
        managerConfiguration.telemetry = telemetry
        let manager = ImageManager(
            cache: cache, loader: ImageDownloader(configuration: downloads), configuration: managerConfiguration)

        let first = try await manager.loadImage(server.url("/a.png"), options: .waitStoreCache)
        XCTAssertNotNil(first.timings.download)
        XCTAssertNotNil(first.timings.decode)
        XCTAssertNotNil(first.timings.queueWait)
        XCTAssertNotNil(first.timings.store)
        XCTAssertGreaterThanOrEqual(first.timings.total ?? 0, first.timings.download ?? .infinity)
        _ = try await manager.loadImage(server.url("/a.png"))  // memory
        await cache.clear(.memory)
        let fromDisk = try await manager.loadImage(server.url("/a.png"))
        XCTAssertEqual(fromDisk.cacheType, .disk)
        XCTAssertNotNil(fromDisk.timings.cacheQuery)
        do { _ = try await manager.loadImage(server.url("/missing.png")); XCTFail("404") } catch {}
        _ = try await manager.loadImage(server.url("/flaky.png"))  // one retry

        func loads(_ outcome: String, _ tier: String) -> Int64 {
            metrics.counterTotal(label: "imagekit_loads_total", dimensions: [("outcome", outcome), ("tier", tier)])
        }
        XCTAssertEqual(loads("success", "network"), 2)
        XCTAssertEqual(loads("success", "memory"), 1)
        XCTAssertEqual(loads("success", "disk"), 1)
        XCTAssertEqual(loads("failure", "none"), 1)
        XCTAssertEqual(
            metrics.counterTotal(label: "imagekit_errors_total", dimensions: [("code", "invalidStatusCode")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "imagekit_downloads_total", dimensions: [("outcome", "success")]), 2)
        XCTAssertEqual(metrics.counterTotal(label: "imagekit_downloads_total", dimensions: [("outcome", "failure")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "imagekit_download_bytes_total"), Int64(png.count * 2))
        XCTAssertEqual(metrics.counterTotal(label: "imagekit_download_retries_total"), 1)
        XCTAssertEqual(
            try metrics.expectTimer("imagekit_decode_seconds").values.count, 2,
            "the two network decodes (a disk hit is decoded by the cache)")
        XCTAssertGreaterThanOrEqual(try metrics.expectTimer("imagekit_disk_write_seconds").values.count, 1)
        XCTAssertGreaterThanOrEqual(try metrics.expectTimer("imagekit_disk_read_seconds").values.count, 1)
        XCTAssertGreaterThan(try metrics.expectGauge("imagekit_memory_cache_cost_bytes").lastValue ?? 0, 0)
        XCTAssertGreaterThan(try metrics.expectGauge("imagekit_disk_cache_size_bytes").lastValue ?? 0, 0)

        let records = store.records.withLock { $0 }
        XCTAssertTrue(
            records.contains { $0.0 == .warning && $0.1 == "retrying a download" && $0.2["imagekit.url"] != nil })
        XCTAssertTrue(
            records.contains {
                $0.0 == .debug && $0.1 == "cache queried" && $0.2["imagekit.cache_key"] != nil
                    && $0.2["imagekit.job"] != nil
            })
        XCTAssertTrue(records.contains { $0.1 == "load failed" && "\($0.2["imagekit.error"] ?? "")".contains("404") })
    }

    func testEvictionsAreCounted() throws {
        let metrics = TestMetrics()
        let cache = MemoryCache(
            configuration: .init(costLimit: 64 * 64 * 4 * 2, maxEntryCostFraction: 1),
            telemetry: ImageKitTelemetry(metricsFactory: metrics))
        for index in 0..<5 {
            cache.setImage(
                DecodedImage(
                    frames: [ImageFrame(bitmap: try PixelBuffer(width: 64, height: 64).freeze(isOpaque: true))],
                    format: .png),
                forKey: "\(index)")
        }
        XCTAssertEqual(cache.evictionCount, 3)
        XCTAssertEqual(metrics.counterTotal(label: "imagekit_memory_cache_evictions_total"), 3)
        XCTAssertEqual(try metrics.expectGauge("imagekit_memory_cache_cost_bytes").lastValue, Double(64 * 64 * 4 * 2))
    }
}
