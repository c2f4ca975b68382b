import Foundation
import Tracing

/// The spans ImageKit makes, through swift-distributed-tracing: the application's tracer (an
/// OpenTelemetry exporter such as swift-otel's, bootstrapped with `InstrumentationSystem`)
/// receives them; with none bootstrapped they are no-ops. ImageKit ships no exporter.
///
/// An ``ImageManager`` load is a span `imagekit.load` under the caller's `ServiceContext.current`,
/// with a child for each stage that runs: `imagekit.cache.query`, `imagekit.download` (and under
/// it the downloader's client span `GET`, whose context goes to the origin in `traceparent`),
/// `imagekit.decode`, `imagekit.cache.store`. They end before the callers are answered, the load's
/// carrying the error of a failed load. A load answered from the memory cache makes none.
///
/// ```swift
/// import OTel   // in the application, not in ImageKit
/// let observability = try OTel.bootstrap()   // InstrumentationSystem now holds its tracer
/// let result = try await withSpan("render page") { _ in
///     try await ImageManager.shared.loadImage(url)   // imagekit.load is a child of "render page"
/// }
/// ```
public enum ImageKitTracing {
    /// Runs `body` in a span named `name`, child of `context`, ended when `body` returns or
    /// throws (a thrown error is recorded on it). For synchronous work on a thread that does not
    /// carry the task's `ServiceContext`: the worker pool's jobs pass it explicitly.
    public static func span<Success, Failure: Error>(
        _ name: String, context: ServiceContext, ofKind kind: SpanKind = .internal,
        _ body: (any Span) throws(Failure) -> Success
    ) throws(Failure) -> Success {
        let span = InstrumentationSystem.tracer.startSpan(name, context: context, ofKind: kind)
        defer { span.end() }
        do {
            return try body(span)
        } catch {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    /// Runs `body` in a span named `name`, child of `context` (nil: `ServiceContext.current`),
    /// with the span's context as `ServiceContext.current` inside; ended when `body` returns or
    /// throws. swift-distributed-tracing's own `withSpan` with typed throws kept.
    public static func span<Success, Failure: Error>(
        _ name: String, context: ServiceContext? = nil, ofKind kind: SpanKind = .internal,
        isolation: isolated (any Actor)? = #isolation, _ body: (any Span) async throws(Failure) -> Success
    ) async throws(Failure) -> Success {
        let parent = context ?? ServiceContext.current ?? .topLevel
        let span = InstrumentationSystem.tracer.startSpan(name, context: parent, ofKind: kind)
        defer { span.end() }
        let outcome: Result<Success, Failure> = await ServiceContext.$current.withValue(
            span.context,
            operation: {
                do throws(Failure) { return .success(try await body(span)) } catch { return .failure(error) }
            }, isolation: isolation)
        if case .failure(let error) = outcome {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        }
        return try outcome.get()
    }

    /// The W3C `traceparent` (and `tracestate`) of `context` as request headers; empty when no
    /// tracer is bootstrapped or the context holds no span.
    public static func propagationHeaders(for context: ServiceContext) -> [String: String] {
        var headers: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &headers, using: HeaderDictionaryInjector())
        return headers
    }

    /// The URL as a span attribute: scheme, host, port and path, never the query (which may
    /// carry a token) or credentials.
    public static func spanURL(_ url: URL) -> String {
        var components = URLComponents()
        components.scheme = url.scheme
        components.host = url.host
        components.port = url.port
        components.path = url.path
        return components.string ?? url.scheme.map { $0 + "://" } ?? ""
    }
}

/// Writes propagation headers into a `[String: String]` of request headers.
struct HeaderDictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}
