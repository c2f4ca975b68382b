import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 server on 127.0.0.1 (port 0) inside the test process, with scripted routes and
/// a request counter. Never reaches beyond loopback.
final class TestHTTPServer: @unchecked Sendable {
    // Invariant: `routes`, `counts` and `lastHeaders` are guarded by `lock`.
    struct Response {
        var status: HTTPResponseStatus = .ok
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        /// Send the body in pieces of this size, `delay` apart.
        var chunkSize: Int?
        var delay: TimeAmount = .zero
        /// Omit Content-Length (chunked encoding).
        var chunked = false
        /// Close the connection after this many body bytes.
        var closeAfter: Int?
    }

    typealias RouteHandler = @Sendable (HTTPRequestHead) -> Response

    private let lock = NSLock()
    private var routes: [String: RouteHandler] = [:]
    private var counts: [String: Int] = [:]
    private var lastHeaders: [String: HTTPHeaders] = [:]
    private var inFlight = 0
    private var mostInFlight = 0
    private var connections = 0
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var channel: Channel!

    var port: Int { channel.localAddress!.port! }

    /// `host` is a loopback address (127.0.0.1 by default; 127.0.0.2 for the address-policy
    /// tests' forbidden listener).
    init(host: String = "127.0.0.1") throws {
        self.host = host
        channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                lock.lock(); connections += 1; lock.unlock()
                return channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(RequestHandler(server: self))
                }
            }
            .bind(host: host, port: 0).wait()
    }

    let host: String

    /// Connections accepted so far.
    var connectionCount: Int {
        lock.lock(); defer { lock.unlock() }; return connections
    }

    func stop() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    func url(_ path: String) -> URL { URL(string: "http://\(host):\(port)\(path)")! }

    func route(_ path: String, _ handler: @escaping RouteHandler) {
        lock.lock(); routes[path] = handler; lock.unlock()
    }

    func route(_ path: String, _ response: Response) {
        route(path, { @Sendable _ in response } as RouteHandler)
    }

    func requests(to path: String) -> Int {
        lock.lock(); defer { lock.unlock() }; return counts[path] ?? 0
    }

    func headers(of path: String) -> HTTPHeaders? {
        lock.lock(); defer { lock.unlock() }; return lastHeaders[path]
    }

    /// The most requests the server was answering at once (from the request head to the last
    /// byte of the response written).
    var maxConcurrentRequests: Int {
        lock.lock(); defer { lock.unlock() }; return mostInFlight
    }

    fileprivate func responseEnded() {
        lock.lock(); inFlight -= 1; lock.unlock()
    }

    fileprivate func respond(to head: HTTPRequestHead) -> Response {
        lock.lock()
        inFlight += 1
        mostInFlight = max(mostInFlight, inFlight)
        let path = String(head.uri.split(separator: "?").first ?? "")
        counts[path, default: 0] += 1
        lastHeaders[path] = head.headers
        let handler = routes[path]
        lock.unlock()
        return handler?(head) ?? Response(status: .notFound, body: Array("not found".utf8))
    }

    private final class RequestHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let server: TestHTTPServer
        init(server: TestHTTPServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head(let head) = unwrapInboundIn(data) else { return }
            let response = server.respond(to: head)
            var headers = HTTPHeaders(response.headers)
            if response.chunked {
                headers.replaceOrAdd(name: "transfer-encoding", value: "chunked")
            } else if !headers.contains(name: "content-length") {
                headers.replaceOrAdd(name: "content-length", value: String(response.body.count))
            }
            context.write(
                wrapOutboundOut(
                    .head(HTTPResponseHead(version: head.version, status: response.status, headers: headers))),
                promise: nil)
            let limit = response.closeAfter ?? response.body.count
            let body = Array(response.body.prefix(limit))
            let pieces: [[UInt8]] =
                response.chunkSize.map { size in
                    stride(from: 0, to: body.count, by: max(1, size)).map {
                        Array(body[$0..<min($0 + size, body.count)])
                    }
                } ?? [body]
            sendPieces(pieces[...], context: context, response: response)
        }

        private func sendPieces(_ pieces: ArraySlice<[UInt8]>, context: ChannelHandlerContext, response: Response) {
            guard let piece = pieces.first else {
                let server = self.server
                if response.closeAfter != nil {
                    context.flush()
                    context.close(promise: nil)
                    server.responseEnded()
                } else {
                    context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in server.responseEnded() }
                }
                return
            }
            if !piece.isEmpty {
                context.writeAndFlush(
                    wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: piece)))), promise: nil)
            }
            let rest = pieces.dropFirst()
            if response.delay == .zero {
                sendPieces(rest, context: context, response: response)
            } else {
                context.eventLoop.scheduleTask(in: response.delay) { [self] in
                    guard context.channel.isActive else {
                        server.responseEnded()
                        return
                    }
                    sendPieces(rest, context: context, response: response)
                }
            }
        }
    }
}
