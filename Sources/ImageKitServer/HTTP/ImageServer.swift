#if Serve
import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// `imagekit serve` as a library: the image routes on a Hummingbird HTTP/1.1 server (keep-alive),
/// run in a swift-service-lifecycle `ServiceGroup` that shuts down gracefully on SIGTERM and
/// SIGINT: `/healthz` turns 503, the listener closes, requests in flight finish within the
/// grace period, and the caches' disk work is flushed before ``run(onStarted:)`` returns.
///
/// ```swift
/// let registry = PrometheusCollectorRegistry()
/// MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
/// let service = try ImageService(configuration: configuration)
/// let server = ImageServer(service: service, host: "127.0.0.1", port: 8080, registry: registry)
/// try await server.run { host, port in print("listening on \(host):\(port)") }
/// ```
public struct ImageServer: Sendable {
    /// The service answering image paths.
    public let service: ImageService
    /// The address to listen on.
    public var host: String
    /// The port to listen on (0: any free port, told to `onStarted`).
    public var port: Int
    /// Pending connections the kernel queues for the listener (capped by `net.core.somaxconn`);
    /// behind a proxy that opens many at once, a short queue turns a burst into refused connections.
    public var backlog: Int
    /// How long requests in flight may take to finish after SIGTERM before they are cancelled.
    public var gracePeriod: Duration
    /// The registry `/metrics` prints (nil: no `/metrics`).
    public var registry: PrometheusCollectorRegistry?
    /// The server's own log (start, stop, errors).
    public var logger: Logger
    /// One line per request at `info` (nil: none).
    public var accessLog: Logger?
    /// Shared with the routes: draining once a shutdown signal arrives.
    public let health = ServiceHealth()

    /// A server for `service`; nothing listens until ``run(onStarted:)``.
    public init(
        service: ImageService, host: String = "127.0.0.1", port: Int = 8080, backlog: Int = 1024,
        gracePeriod: Duration = .seconds(10),
        registry: PrometheusCollectorRegistry? = nil, logger: Logger = Logger(label: "imagekit.serve"),
        accessLog: Logger? = nil
    ) {
        self.service = service
        self.host = host
        self.port = port
        self.backlog = backlog
        self.gracePeriod = gracePeriod
        self.registry = registry
        self.logger = logger
        self.accessLog = accessLog
    }

    /// Listens and serves until SIGTERM or SIGINT (then drains, as the type's summary says).
    /// `onStarted` is called once with the address bound (the real port when ``port`` is 0).
    public func run(onStarted: @escaping @Sendable (_ host: String, _ port: Int) -> Void = { _, _ in }) async throws {
        let router = Router()
        router.add(middleware: ConnectionCloseMiddleware())
        ImageServiceRoutes(service: service, health: health, registry: registry, accessLog: accessLog).register(
            on: router)
        let host = self.host, port = self.port, backlog = self.backlog
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: "imagekit", backlog: backlog),
            onServerRunning: { channel in onStarted(host, channel.localAddress?.port ?? port) },
            logger: logger
        )
        // Shut down in reverse order: draining starts first, then the server stops accepting
        // and waits for its requests.
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: app), .init(service: DrainOnShutdown(health: health))],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = gracePeriod
        let group = ServiceGroup(configuration: configuration)
        defer { service.flush() }
        try await group.run()
    }
}

/// Says `Connection: close` on the answer to a request that said it: the server closes such a
/// connection after the answer (RFC 9112 §9.6), and a proxy that keeps upstream connections
/// alive (nginx `keepalive`) reuses one whose answer did not say so, then finds it closed (502).
struct ConnectionCloseMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response = try await next(request, context)
        if let connection = request.headers[.connection],
            connection.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces).lowercased() == "close"
            })
        {
            response.headers[.connection] = "close"
        }
        return response
    }
}

/// Turns ``ServiceHealth`` to draining when the group's graceful shutdown begins.
private struct DrainOnShutdown: Service {
    let health: ServiceHealth

    func run() async throws {
        try? await gracefulShutdown()
        health.startDraining()
    }
}
#endif
