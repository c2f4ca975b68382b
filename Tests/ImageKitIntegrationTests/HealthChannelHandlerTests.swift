#if Serve
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import XCTest

@testable import ImageKitServer

/// `/healthz` answered on the event loop: a probe never reaches the router (so never waits for a
/// task), every other request does, and HTTP/1.1's answer order holds on a pipelined connection.
final class HealthChannelHandlerTests: XCTestCase {
    private func channel(_ health: ServiceHealth = ServiceHealth()) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HealthChannelHandler(health: health, serverName: "imagekit"))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        return channel
    }

    private func request(_ method: HTTPRequest.Method, _ path: String, close: Bool = false) -> HTTPRequest {
        var request = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: path)
        if close { request.headerFields[.connection] = "close" }
        return request
    }

    private func send(_ request: HTTPRequest, on channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPRequestPart.head(request))
        try channel.writeInbound(HTTPRequestPart.end(nil))
    }

    /// The parts written back: the head and the body's bytes, after checking the answer ended.
    private func answer(on channel: EmbeddedChannel) throws -> (HTTPResponse, String)? {
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self) else { return nil }
        var body = ""
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .body(let buffer): body += String(buffer: buffer)
            case .end: return (head, body)
            case .head: XCTFail("a second head before the end")
            }
        }
        XCTFail("no end")
        return nil
    }

    func testAProbeIsAnsweredWithoutReachingTheRouter() throws {
        let channel = try channel()
        try send(request(.get, "/healthz"), on: channel)
        XCTAssertNil(try channel.readInbound(as: HTTPRequestPart.self), "the router saw nothing")
        let (head, body) = try XCTUnwrap(answer(on: channel))
        XCTAssertEqual(head.status, .ok)
        XCTAssertEqual(body, #"{"status":"serving"}"#)
        XCTAssertEqual(head.headerFields[.contentType], "application/json")
        XCTAssertEqual(head.headerFields[.contentLength], String(body.utf8.count))
        XCTAssertEqual(head.headerFields[.cacheControl], "no-cache")
        XCTAssertEqual(head.headerFields[.server], "imagekit")
        let date = try XCTUnwrap(head.headerFields[.date])
        XCTAssertNotNil(
            date.wholeMatch(of: #/(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT/#), date)
        XCTAssertNil(head.headerFields[.connection])
        XCTAssertTrue(channel.isActive, "keep-alive: the connection stays open")

        try send(request(.head, "/healthz?probe=1"), on: channel)
        let (headOnly, empty) = try XCTUnwrap(answer(on: channel))
        XCTAssertEqual(headOnly.status, .ok)
        XCTAssertEqual(empty, "")
        XCTAssertEqual(headOnly.headerFields[.contentLength], "20", "HEAD keeps the GET's length")
    }

    func testADrainingServiceAnswers503AndCloseClosesTheConnection() throws {
        let health = ServiceHealth()
        health.startDraining()
        let channel = try channel(health)
        try send(request(.get, "/healthz", close: true), on: channel)
        let (head, body) = try XCTUnwrap(answer(on: channel))
        XCTAssertEqual(head.status, .serviceUnavailable)
        XCTAssertEqual(head.headerFields[.retryAfter], "1")
        XCTAssertEqual(body, #"{"status":"draining"}"#)
        XCTAssertEqual(head.headerFields[.connection], "close")
        channel.embeddedEventLoop.run()
        XCTAssertFalse(channel.isActive, "closed after the answer")
    }

    func testOtherRequestsAndAPipelinedProbeGoToTheRouterInOrder() throws {
        let channel = try channel()
        for (method, path) in [
            (HTTPRequest.Method.get, "/unsafe/100x100/a.jpg"), (.post, "/healthz"), (.get, "/healthzz"),
        ] {
            try send(request(method, path), on: channel)
            guard case .head(let passed) = try channel.readInbound(as: HTTPRequestPart.self) else {
                return XCTFail("\(path) did not reach the router")
            }
            XCTAssertEqual(passed.path, path)
            guard case .end = try channel.readInbound(as: HTTPRequestPart.self) else { return XCTFail("no end") }
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .notFound)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            _ = try channel.readOutbound(as: HTTPResponsePart.self)
            _ = try channel.readOutbound(as: HTTPResponsePart.self)
        }

        // An image request still being answered: a probe pipelined behind it must not answer first.
        try send(request(.get, "/unsafe/100x100/b.jpg"), on: channel)
        try send(request(.get, "/healthz"), on: channel)
        XCTAssertNil(try channel.readOutbound(as: HTTPResponsePart.self), "nothing answered ahead of the image")
        var paths: [String?] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            if case .head(let passed) = part { paths.append(passed.path) }
        }
        XCTAssertEqual(paths, ["/unsafe/100x100/b.jpg", "/healthz"], "both go to the router, in order")
        // Once both answers ended, probes are answered here again.
        for _ in 0..<2 {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
        while try channel.readOutbound(as: HTTPResponsePart.self) != nil {}
        try send(request(.get, "/healthz"), on: channel)
        XCTAssertNil(try channel.readInbound(as: HTTPRequestPart.self))
        XCTAssertEqual(try XCTUnwrap(answer(on: channel)).0.status, .ok)
    }

    /// The health listener (`--health-port`): its own socket, answered on the event loops; 200 or
    /// 503 while draining, 404 for other paths, NIO's 400 for bytes that are not HTTP.
    func testTheHealthListenerAnswersOnlyHealth() async throws {
        let health = ServiceHealth()
        let listener = try await ImageServer.bindHealthListener(
            host: "127.0.0.1", port: 0, health: health, serverName: "imagekit")
        let port = try XCTUnwrap(listener.localAddress?.port)
        let serving = try HTTPAnswer.fetch(port: port, path: "/healthz")
        XCTAssertEqual(serving.status, 200)
        XCTAssertEqual(serving.json["status"], "serving")
        XCTAssertEqual(serving.headers["server"], "imagekit")
        let head = try HTTPAnswer.fetch(port: port, path: "/healthz", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body, [])
        let other = try HTTPAnswer.fetch(port: port, path: "/unsafe/100x100/example.com/a.jpg")
        XCTAssertEqual(other.status, 404)
        XCTAssertEqual(other.json["error"], "notFound")
        let garbage = String(
            decoding: try HTTPAnswer.exchange(port: port, Array("NOT HTTP\r\n\r\n".utf8)), as: UTF8.self)
        XCTAssertTrue(garbage.hasPrefix("HTTP/1.1 400"), garbage)
        health.startDraining()
        let draining = try HTTPAnswer.fetch(port: port, path: "/healthz")
        XCTAssertEqual(draining.status, 503)
        XCTAssertEqual(draining.headers["retry-after"], "1")
        try await listener.close()
        XCTAssertThrowsError(try HTTPAnswer.fetch(port: port, path: "/healthz"), "closed")
    }
}
#endif
