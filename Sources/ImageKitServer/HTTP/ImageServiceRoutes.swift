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
            return Self.response(answer)
        }
        // Image paths: the access log outermost (a drained answer is logged too), then draining.
        let images = router.group()
        if let accessLog { images.add(middleware: AccessLogMiddleware(logger: accessLog)) }
        images.add(middleware: DrainMiddleware(health: health))
        let handler: @Sendable (Request, Context) async throws -> Response = { request, _ in
            let answer = await service.handle(request.head)
            AccessFacts.record(answer)
            return Self.response(answer)
        }
        images.get("**", use: handler)
        images.head("**", use: handler)
        // Other methods on image paths: 405 with the JSON body, not the router's bare 404.
        for method in [HTTPRequest.Method.post, .put, .delete, .patch] {
            images.on("**", method: method, use: handler)
        }
    }

    /// The service's answer as Hummingbird's response; HEAD keeps the `Content-Length` a GET
    /// would have sent (the service leaves it in the fields, with no body).
    static func response(_ answer: ImageServiceResponse) -> Response {
        let body = answer.body.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
        return Response(status: answer.status, headers: answer.headerFields, body: body)
    }

    static func healthResponse(_ health: ServiceHealth, isHead: Bool) -> Response {
        response(healthAnswer(health, isHead: isHead))
    }

    /// `/healthz`'s answer: 200 `{"status":"serving"}`, or 503 `{"status":"draining"}` with
    /// `Retry-After` once draining; a HEAD keeps the `Content-Length` without the body.
    static func healthAnswer(_ health: ServiceHealth, isHead: Bool) -> ImageServiceResponse {
        let draining = health.isDraining
        var answer = ImageServiceResponse.json(
            draining ? .serviceUnavailable : .ok,
            Data((draining ? #"{"status":"draining"}"# : #"{"status":"serving"}"#).utf8), cacheControl: "no-cache")
        if draining { answer.headerFields[.retryAfter] = "1" }
        if isHead { answer.body = Data() }
        return answer
    }
}
#endif
