#if Serve
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers `GET`/`HEAD /healthz` on the connection's event loop, ahead of Hummingbird's router.
///
/// A request reaches the router through a Swift task, and under a burst of image requests the
/// task of a probe waits in the executor's queue behind theirs (each costs a fraction of a
/// millisecond even when it ends in a 503). Answered here, a probe costs what parsing it costs
/// once its connection is read. A new connection still waits for Hummingbird's accept loop, a
/// task too, which NIO feeds ten connections at a time: the health listener
/// (``ImageServer/healthPort``) has neither.
///
/// HTTP/1.1 answers in request order, so a probe pipelined behind a request still being answered
/// on the same connection goes on to the router (which answers `/healthz` the same way).
///
/// On the health listener (``ImageServer/healthPort``) nothing stands behind it: it answers
/// every other path 404 itself.
final class HealthChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private struct Probe {
        var isHead: Bool
        var closesConnection: Bool
        /// A path other than `/healthz` on the health listener: answered 404.
        var isOtherPath = false
    }

    private let health: ServiceHealth
    private let serverName: String?
    private let answersEveryPath: Bool
    /// The probe whose head was read and whose `.end` has not arrived yet.
    private var probe: Probe?
    /// Requests passed on to the router whose answer has not ended.
    private var requestsBeingAnswered = 0

    /// `answersEveryPath`: answer other paths 404 instead of passing them on (the health listener).
    init(health: ServiceHealth, serverName: String?, answersEveryPath: Bool = false) {
        self.health = health
        self.serverName = serverName
        self.answersEveryPath = answersEveryPath
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            if answersEveryPath || (requestsBeingAnswered == 0 && Self.isProbe(request)) {
                probe = Probe(
                    isHead: request.method == .head, closesConnection: request.headerFields.asksToClose,
                    isOtherPath: !Self.isProbe(request))
            } else {
                requestsBeingAnswered += 1
                context.fireChannelRead(data)
            }
        case .body:
            if probe == nil { context.fireChannelRead(data) }
        case .end:
            guard let probe else { return context.fireChannelRead(data) }
            self.probe = nil
            answer(probe, context: context)
        }
    }

    /// On the health listener nothing behind this handler would close a connection whose bytes
    /// are not HTTP (NIO's error handler has answered 400 ahead of it): close it here.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if answersEveryPath { context.close(promise: nil) } else { context.fireErrorCaught(error) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { requestsBeingAnswered = max(0, requestsBeingAnswered - 1) }
        context.write(data, promise: promise)
    }

    private func answer(_ probe: Probe, context: ChannelHandlerContext) {
        var answer =
            probe.isOtherPath
            ? ImageServiceResponse.error(
                ImageServiceError(.notFound, "no such route: the health listener answers /healthz"))
            : ImageServiceRoutes.healthAnswer(health, isHead: false)
        if probe.isHead { answer.body = Data() }  // the fields keep the GET's Content-Length
        var fields = answer.headerFields
        if probe.closesConnection { fields[.connection] = "close" }
        fields[.date] = Self.httpDate(Date())
        if let serverName { fields[.server] = serverName }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: fields))), promise: nil)
        if !answer.body.isEmpty {
            context.write(wrapOutboundOut(.body(ByteBuffer(bytes: answer.body))), promise: nil)
        }
        if probe.closesConnection {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    private static func isProbe(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head, let path = request.path else { return false }
        return path == "/healthz" || path.hasPrefix("/healthz?")
    }

    /// RFC 9110's IMF-fixdate, as Hummingbird's own answers carry (English names whatever the
    /// process's locale).
    static func httpDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(twoDigits(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):"
            + "\(twoDigits(parts.tm_sec)) GMT"
    }
}
#endif
