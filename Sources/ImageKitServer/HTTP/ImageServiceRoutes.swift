#if Serve
import Foundation
import HTTPTypes
import Hummingbird
import ImageKit
import Logging
import Prometheus

/// Whether the service takes new work: `/healthz` answers 503 and image requests 503 with
/// `Retry-After` once draining starts (SIGTERM), while requests already in flight finish.
public final class ServiceHealth: Sendable {
    private let state = Locked(false)

    /// A health that is serving.
    public init() {}

    /// True once ``startDraining()`` was called.
    public var isDraining: Bool { state.withLock { $0 } }

    /// Stops taking new work (one way: a drained service does not come back).
    public func startDraining() { state.withLock { $0 = true } }
}

/// The image service's routes for a Hummingbird router: `GET/HEAD /healthz`, `GET /metrics`
/// (Prometheus text, when a registry is given) and every other path as a thumbor or imgproxy URL.
/// An application mounts them in its own router; `imagekit serve` is this plus ``ImageServer``.
///
/// ```swift
/// let router = Router()
/// router.get("/hello") { _, _ in "hello" }
/// let service = try ImageService(configuration: configuration)
/// ImageServiceRoutes(service: service).register(on: router)
/// ```
///
/// The image route is a catch-all (`**`): register the application's own routes on the same
/// router (any order; a literal path wins over the catch-all).
public struct ImageServiceRoutes: Sendable {
    /// The service answering image paths.
    public let service: ImageService
    /// Draining state shared with the lifecycle (SIGTERM).
    public let health: ServiceHealth
    /// The registry `/metrics` prints; nil: no `/metrics` route.
    public let registry: PrometheusCollectorRegistry?
    /// Where the access log goes: one line per image request at `info`; nil: none.
    public let accessLog: Logger?

    /// Routes for `service`. Pass the registry the process's `MetricsSystem` was bootstrapped
    /// with to serve `/metrics`.
    public init(
        service: ImageService, health: ServiceHealth = ServiceHealth(), registry: PrometheusCollectorRegistry? = nil,
        accessLog: Logger? = nil
    ) {
        self.service = service
        self.health = health
        self.registry = registry
        self.accessLog = accessLog
    }

    /// Adds the routes to `router`.
    public func register<Context: RequestContext>(on router: Router<Context>) {
        let health = self.health
        router.get("/healthz") { _, _ in Self.healthResponse(health, isHead: false) }
        router.head("/healthz") { _, _ in Self.healthResponse(health, isHead: true) }
        if let registry {
            let service = self.service
            router.get("/metrics") { _, _ -> Response in
                service.refreshGauges()
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(
                    status: .ok, headers: headers,
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
            }
        }
        // The admin route: a literal path, so it wins over the image catch-all. Without an admin
        // key the service answers it 404, as for any path that does not exist.
        let service = self.service
        router.post("/admin/purge") { request, _ -> Response in
            var request = request
            let body = (try? await request.collectBody(upTo: 64 << 10)).map { Data(buffer: $0) } ?? Data()
            let answer = await service.purge(
                body: body, query: request.uri.query, authorization: request.headers[.authorization])
            return Self.response(answer, isHead: false)
        }
        let handler: @Sendable (Request, Context) async throws -> Response = { request, _ in
            await answer(request)
        }
        router.get("**", use: handler)
        router.head("**", use: handler)
        // Other methods on image paths: 405 with the JSON body, not the router's bare 404.
        for method in [HTTPRequest.Method.post, .put, .delete, .patch] {
            router.on("**", method: method, use: handler)
        }
    }

    private func answer(_ request: Request) async -> Response {
        let started = ContinuousClock.now
        let method = request.method.rawValue
        let path = request.head.path ?? "/"
        let answer: ImageServiceResponse
        if health.isDraining {
            answer = .error(ImageServiceError(.draining, "the service is shutting down; try another node"))
        } else {
            var headers: [String: String] = [:]
            for field in request.headers {
                let name = field.name.canonicalName
                headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
            }
            answer = await service.handle(method: method, path: path, headers: headers)
        }
        if let accessLog {
            let elapsed = ContinuousClock.now - started
            accessLog.info(
                "request",
                metadata: [
                    "method": .string(method),
                    "path": .string(ImageService.loggablePath(path)),
                    "status": .stringConvertible(answer.status),
                    "bytes": .stringConvertible(answer.body.count),
                    "duration_ms": .string(String(format: "%.2f", Double(elapsed.nanoseconds) / 1e6)),
                    "cache": .string(answer.cacheTier?.rawValue ?? "-"),
                    "grammar": .string(answer.grammar?.rawValue ?? "-"),
                ])
        }
        return Self.response(answer, isHead: method == "HEAD")
    }

    static func response(_ answer: ImageServiceResponse, isHead: Bool) -> Response {
        var fields = HTTPFields()
        for header in answer.headers {
            guard let name = HTTPField.Name(header.name) else { continue }
            fields.append(HTTPField(name: name, value: header.value))
        }
        let status = HTTPResponse.Status(code: answer.status)
        // HEAD keeps the Content-Length a GET would have sent (the service leaves it in the headers).
        let body =
            isHead || answer.body.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
        return Response(status: status, headers: fields, body: body)
    }

    static func healthResponse(_ health: ServiceHealth, isHead: Bool) -> Response {
        let draining = health.isDraining
        var answer = ImageServiceResponse(
            status: draining ? 503 : 200,
            headers: [(name: "Content-Type", value: "application/json"), (name: "Cache-Control", value: "no-cache")],
            body: Data((draining ? #"{"status":"draining"}"# : #"{"status":"serving"}"#).utf8))
        answer.headers.append((name: "Content-Length", value: String(answer.body.count)))
        if draining { answer.headers.append((name: "Retry-After", value: "1")) }
        return response(answer, isHead: isHead)
    }
}
#endif
