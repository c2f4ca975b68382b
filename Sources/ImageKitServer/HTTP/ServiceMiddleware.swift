#if Serve
import Foundation
import HTTPTypes
import Hummingbird
import ImageKit
import Logging

/// Answers image requests 503 with `Retry-After` (the JSON error body) once the node drains
/// (SIGTERM), so a proxy retries them on another node while requests in flight finish.
struct DrainMiddleware<Context: RequestContext>: RouterMiddleware {
    let health: ServiceHealth

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard health.isDraining else { return try await next(request, context) }
        var answer = ImageServiceResponse.error(
            ImageServiceError(.draining, "the service is shutting down; try another node"))
        if request.method == .head { answer.body = Data() }
        AccessFacts.record(answer)
        return ImageServiceRoutes.response(answer)
    }
}

/// One line per image request at `info`: method, the path with its signature replaced
/// (``ImageService/loggablePath(_:)``), status, body bytes, duration, the cache tier that
/// answered and the grammar (the handler tells these two through `AccessFacts.record(_:)`), and
/// the quality autoquality chose when it did.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        // Below `info` (`--log-level warning`) no line is written: nothing to measure or format.
        guard logger.logLevel <= .info else { return try await next(request, context) }
        let started = ContinuousClock.now
        let facts = AccessFacts()
        let response = try await AccessFacts.$current.withValue(facts) { try await next(request, context) }
        let answer = facts.answer.withLock { $0 }
        let elapsed = ContinuousClock.now - started
        var metadata: Logger.Metadata = [
            "method": .string(request.method.rawValue),
            "path": .string(ImageService.loggablePath(request.head.path ?? "/")),
            "status": .stringConvertible(response.status.code),
            "bytes": .stringConvertible(answer?.bytes ?? 0),
            "duration_ms": .string(elapsed.accessLogMilliseconds),
            "cache": .string(answer?.tier?.rawValue ?? "-"),
            "grammar": .string(answer?.grammar?.rawValue ?? "-"),
        ]
        if let quality = response.headers[ImageService.qualityField] { metadata["quality"] = .string(quality) }
        logger.info("request", metadata: metadata)
        return response
    }
}

extension Duration {
    /// The duration in milliseconds with two decimals, rounded half up ("10.76"), without
    /// Foundation's `String(format:)`, which costs more than the rest of an access line.
    var accessLogMilliseconds: String {
        let nanoseconds = max(0, self.nanoseconds)
        let hundredths = nanoseconds / 10_000 + (nanoseconds % 10_000 >= 5_000 ? 1 : 0)
        let fraction = hundredths % 100
        return "\(hundredths / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }
}

/// What the handler of an image request learnt that its response does not carry (the cache
/// tier, the grammar), for the access log: one per request, reached through a task local.
final class AccessFacts: Sendable {
    let answer = Locked<(tier: ImageServiceCacheTier?, grammar: ImageRequest.Grammar?, bytes: Int)?>(nil)

    /// The current request's facts; nil without an access log.
    @TaskLocal static var current: AccessFacts?

    /// Called by the handler with its answer (nothing happens without an access log).
    static func record(_ answer: ImageServiceResponse) {
        current?.answer.withLock { $0 = (answer.cacheTier, answer.grammar, answer.body.count) }
    }
}
#endif
