import Foundation
import InMemoryTracing
import NIOHTTP1
import Tracing
import XCTest

@testable import ImageKit

/// The library's spans with a tracer bootstrapped, as an app would: an `ImageManager` load is
/// `imagekit.load` under the caller's span, a child per stage, and the download's client span,
/// whose context the origin receives.
final class ImageManagerTracingTests: XCTestCase {
    /// Bootstrapped once for the test process (the system takes one tracer for its life). It
    /// records only the spans of traces a test marks, so other suites' loads stay untraced.
    static let tracer: MarkedTraceRecorder = {
        let tracer = MarkedTraceRecorder()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    func testALoadIsASpanWithAChildPerStageAndTheOriginGetsTheTrace() async throws {
        let tracer = Self.tracer
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/a.jpg", .init(body: ImageManagerIntegrationTests.jpeg))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tracing-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try ImageCache(directory: directory, configuration: .init(disk: .init(sweepsAtOpen: false)))
        let manager = ImageManager(cache: cache, loader: ImageDownloader())

        let result = try await ServiceContext.withValue(MarkedTraceRecorder.marked) {
            try await withSpan("render page") { _ in try await manager.loadImage(server.url("/a.jpg")) }
        }
        XCTAssertEqual(result.image?.width, 400)
        // The load's spans end before its callers are answered, so before "render page" does.
        let spans = tracer.recorder.finishedSpans
        XCTAssertEqual(
            spans.map(\.operationName).suffix(2), ["imagekit.load", "render page"], "\(spans.map(\.operationName))")
        let page = try XCTUnwrap(spans.first { $0.operationName == "render page" })
        let load = try XCTUnwrap(spans.first { $0.operationName == "imagekit.load" })
        XCTAssertEqual(load.spanContext.parentSpanID, page.spanContext.spanID)
        for stage in ["imagekit.cache.query", "imagekit.download", "imagekit.decode", "imagekit.cache.store"] {
            let span = try XCTUnwrap(spans.first { $0.operationName == stage }, "\(spans.map(\.operationName))")
            XCTAssertEqual(span.spanContext.parentSpanID, load.spanContext.spanID, stage)
        }
        let download = try XCTUnwrap(spans.first { $0.operationName == "imagekit.download" })
        let client = try XCTUnwrap(spans.first { $0.kind == .client })
        XCTAssertEqual(client.spanContext.parentSpanID, download.spanContext.spanID)
        XCTAssertEqual(client.attributes["http.response.status_code"]?.toSpanAttribute(), .int64(200))
        let headers = try XCTUnwrap(server.headers(of: "/a.jpg"))
        XCTAssertEqual(headers.first(name: InMemoryTracer.traceIDKey), page.spanContext.traceID)
        XCTAssertEqual(headers.first(name: InMemoryTracer.spanIDKey), client.spanContext.spanID)

        // A memory hit is answered before any job: no span.
        tracer.recorder.clearAll()
        _ = try await ServiceContext.withValue(MarkedTraceRecorder.marked) {
            try await manager.loadImage(server.url("/a.jpg"))
        }
        XCTAssertEqual(tracer.recorder.finishedSpans.map(\.operationName), [])
        XCTAssertEqual(server.requests(to: "/a.jpg"), 1)

        // A failed load: its stage's span and its own have ended, innermost first, when the
        // caller gets the error; the load's carries it.
        tracer.recorder.clearAll()
        do {
            _ = try await ServiceContext.withValue(MarkedTraceRecorder.marked) {
                try await manager.loadImage(server.url("/missing.jpg"))
            }
            XCTFail("a 404 is an error")
        } catch {}
        let failed = tracer.recorder.finishedSpans
        XCTAssertEqual(
            failed.map(\.operationName).suffix(2), ["imagekit.download", "imagekit.load"],
            "\(failed.map(\.operationName))")
        XCTAssertEqual(failed.last?.status?.code, .error)
        XCTAssertEqual(failed.last?.errors.count, 1)
    }
}

/// Records the spans of traces whose root context carries ``Mark`` (an `InMemoryTracer` behind
/// it); every other span is a no-op that propagates nothing.
final class MarkedTraceRecorder: Tracer, Sendable {
    enum Mark: ServiceContextKey {
        typealias Value = Bool
    }

    static var marked: ServiceContext {
        var context = ServiceContext.topLevel
        context[Mark.self] = true
        return context
    }

    let recorder = InMemoryTracer()

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> MarkedSpan {
        let parent = context()
        guard parent[Mark.self] == true else { return MarkedSpan(recorded: nil, unrecordedContext: parent) }
        let span = recorder.startSpan(
            operationName, context: parent, ofKind: kind, at: instant(), function: function, file: fileID, line: line)
        return MarkedSpan(recorded: span, unrecordedContext: parent)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    )
    where Inject.Carrier == Carrier {
        if context[Mark.self] == true { recorder.inject(context, into: &carrier, using: injector) }
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    )
    where Extract.Carrier == Carrier {}
}

/// An `InMemorySpan`, or nothing for a trace that is not marked.
struct MarkedSpan: Span {
    let recorded: InMemorySpan?
    let unrecordedContext: ServiceContext

    var context: ServiceContext { recorded?.context ?? unrecordedContext }
    var operationName: String {
        get { recorded?.operationName ?? "" }
        nonmutating set { recorded?.operationName = newValue }
    }
    var attributes: SpanAttributes {
        get { recorded?.attributes ?? [:] }
        nonmutating set { recorded?.attributes = newValue }
    }
    var isRecording: Bool { recorded?.isRecording ?? false }
    func setStatus(_ status: SpanStatus) { recorded?.setStatus(status) }
    func addEvent(_ event: SpanEvent) { recorded?.addEvent(event) }
    func addLink(_ link: SpanLink) { recorded?.addLink(link) }
    func recordError<Instant: TracerInstant>(
        _ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant
    ) {
        recorded?.recordError(error, attributes: attributes, at: instant())
    }
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { recorded?.end(at: instant()) }
}
