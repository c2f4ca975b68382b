#if Serve
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOPosix
import Prometheus
import ServiceLifecycle

/// `imagekit serve` as a library: the image routes on a Hummingbird HTTP/1.1 server (keep-alive),
/// run in a swift-service-lifecycle `ServiceGroup` that shuts down gracefully on SIGTERM and
/// SIGINT: `/healthz` turns 503, the listener closes, requests in flight finish within the
/// grace period, and the caches' disk work is flushed before ``run(onStarted:onHealthListening:)`` returns.
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
    /// A second port, on ``host``, that answers only `GET/HEAD /healthz` (nil: none; 0: any free
    /// port, told to `onHealthListening`). The image port answers `/healthz` too, but a probe's
    /// connection there waits in the same accept queue as the image requests' connections: under
    /// a burst of hundreds, for as long as the server takes to accept those ahead of it. This
    /// listener's connections are accepted and answered on the event loops, with no task and no
    /// queue shared with image work: point liveness and readiness probes at it.
    public var healthPort: Int?
    /// Services that run beside the server and stop after it, such as a trace exporter (swift-otel's
    /// `OTel.bootstrap()`), which then sends the spans of the last requests before the process exits.
    public var companions: [any Service] = []

    /// A server for `service`; nothing listens until ``run(onStarted:onHealthListening:)``.
    public init(
        service: ImageService, host: String = "127.0.0.1", port: Int = 8080, backlog: Int = 1024,
        gracePeriod: Duration = .seconds(10),
        registry: PrometheusCollectorRegistry? = nil, logger: Logger = Logger(label: "imagekit.serve"),
        accessLog: Logger? = nil, healthPort: Int? = nil
    ) {
        self.service = service
        self.healthPort = healthPort
        self.host = host
        self.port = port
        self.backlog = backlog
        self.gracePeriod = gracePeriod
        self.registry = registry
        self.logger = logger
        self.accessLog = accessLog
    }

    /// Listens and serves until SIGTERM or SIGINT (then drains, as the type's summary says).
    /// `onStarted` is called once with the address bound (the real port when ``port`` is 0);
    /// `onHealthListening` once with the health listener's port, before it, when ``healthPort``
    /// is set. The health listener answers 503 while the service drains and closes when it stops.
    public func run(
        onStarted: @escaping @Sendable (_ host: String, _ port: Int) -> Void = { _, _ in },
        onHealthListening: @escaping @Sendable (_ port: Int) -> Void = { _ in }
    ) async throws {
        var healthListener: (any Channel)?
        if let healthPort {
            let listener = try await Self.bindHealthListener(
                host: host, port: healthPort, health: health, serverName: Self.serverName)
            onHealthListening(listener.localAddress?.port ?? healthPort)
            healthListener = listener
        }
        do {
            try await runImageServer(onStarted: onStarted)
        } catch {
            try? await healthListener?.close()
            throw error
        }
        try? await healthListener?.close()
    }

    static let serverName = "imagekit"

    /// A plain NIO listener (no Swift task per connection, so nothing to wait for in the
    /// executor's queue): NIO's HTTP/1.1 server pipeline, its protocol-error handler (400 on
    /// garbage), and ``HealthChannelHandler`` answering every request.
    static func bindHealthListener(host: String, port: Int, health: ServiceHealth, serverName: String) async throws
        -> any Channel
    {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    try channel.pipeline.syncOperations.addHandler(
                        HealthChannelHandler(health: health, serverName: serverName, answersEveryPath: true))
                }
            }
            .bind(host: host, port: port).get()
    }

    private func runImageServer(onStarted: @escaping @Sendable (_ host: String, _ port: Int) -> Void) async throws {
        let router = Router()
        router.add(middleware: ConnectionCloseMiddleware())
        ImageServiceRoutes(service: service, health: health, registry: registry, accessLog: accessLog).register(
            on: router)
        let host = self.host, port = self.port, backlog = self.backlog, health = self.health
        let serverName = Self.serverName
        let app = Application(
            router: router,
            // Health probes are answered on the event loop, never queued behind image requests'
            // tasks; the router keeps its `/healthz` for a probe pipelined behind other requests.
            server: .http1(
                configuration: .init(additionalChannelHandlers: [
                    HealthChannelHandler(health: health, serverName: serverName)
                ])),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: serverName, backlog: backlog),
            onServerRunning: { channel in onStarted(host, channel.localAddress?.port ?? port) },
            logger: logger
        )
        // Shut down in reverse order: draining starts first, then the server stops accepting
        // and waits for its requests.
        var configuration = ServiceGroupConfiguration(
            services: companions.map { .init(service: $0) } + [
                .init(service: app), .init(service: DrainOnShutdown(health: health)),
            ],
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
        if request.headers.asksToClose { response.headers[.connection] = "close" }
        return response
    }
}

extension HTTPFields {
    /// Whether a `Connection` field lists `close` (RFC 9112 §9.6): the connection closes after
    /// the answer, which says so too.
    var asksToClose: Bool {
        self[values: .connection].contains { value in
            value.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "close" }
        }
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
