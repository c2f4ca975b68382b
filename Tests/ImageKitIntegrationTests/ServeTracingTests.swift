#if Serve && OTel
import Foundation
import NIOHTTP1
import XCTest

/// `imagekit serve --otel-endpoint` against a small OTLP/HTTP receiver (Tests/otel/otlp_receiver.py,
/// PyPI's opentelemetry-proto decoding what swift-otel sends): one trace per request, continuing
/// an incoming `traceparent`, a child per step, and the origin given the fetch's `traceparent`.
final class ServeTracingTests: XCTestCase {
    /// A span as the receiver wrote it.
    struct ReceivedSpan: Decodable {
        var trace_id: String
        var span_id: String
        var parent_span_id: String
        var name: String
        var kind: String
        var service: String?
        var attributes: [String: AttributeValue]
        var error: Bool
        /// Nanoseconds since the epoch.
        var start: UInt64
        var end: UInt64
    }

    enum AttributeValue: Decodable, Equatable {
        case int(Int)
        case string(String)
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let int = try? container.decode(Int.self) {
                self = .int(int)
            } else if let string = try? container.decode(String.self) {
                self = .string(string)
            } else {
                self = .other
            }
        }
    }

    func testEachRequestIsOneTraceWithAStepPerChildAndTheOriginSeesTraceparent() throws {
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        origin.route("/a.jpg", .init(headers: [("Content-Type", "image/jpeg")], body: ImageServiceTests.jpeg))
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let server = try ServeProcess([
            "--allow-unsafe", "--allow-address", "127.0.0.1/32",
            "--otel-endpoint", "http://127.0.0.1:\(receiver.port)",
        ])
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        let callerSpanID = "00f067aa0ba902b7"
        let continued = try server.request(
            "/unsafe/fit-in/64x64/127.0.0.1:\(origin.port)/a.jpg",
            headers: ["traceparent": "00-\(traceID)-\(callerSpanID)-01"])
        XCTAssertEqual(continued.status, 200)
        let originTraceparent = try XCTUnwrap(origin.headers(of: "/a.jpg")?.first(name: "traceparent"))
        XCTAssertEqual(try server.request("/unsafe/32x32/127.0.0.1:\(origin.port)/a.jpg").status, 200)
        // SIGTERM: the exporter sends the spans it holds before the process exits.
        XCTAssertEqual(server.stop(), 0, server.output)

        let spans = try receiver.spans(until: { $0.filter { $0.kind == "SERVER" }.count >= 2 })
        let traces = Dictionary(grouping: spans, by: \.trace_id)
        XCTAssertEqual(traces.count, 2, "one trace per request: \(spans.map(\.name))")
        XCTAssertTrue(spans.allSatisfy { $0.service == "imagekit" })

        // The first request continues the caller's trace.
        let first = try XCTUnwrap(traces[traceID], "the incoming traceparent's trace: \(traces.keys)")
        func only(_ name: String, in trace: [ReceivedSpan]) throws -> ReceivedSpan {
            let matches = trace.filter { $0.name == name }
            XCTAssertEqual(matches.count, 1, "\(name) in \(trace.map(\.name))")
            return try XCTUnwrap(matches.first)
        }
        let root = try XCTUnwrap(first.first { $0.kind == "SERVER" })
        XCTAssertEqual(root.parent_span_id, callerSpanID)
        XCTAssertEqual(root.name, "GET")
        XCTAssertEqual(root.attributes["http.response.status_code"], .int(200))
        XCTAssertEqual(root.attributes["imagekit.grammar"], .string("thumbor"))
        let children = ["imagekit.result_cache.lookup", "imagekit.fetch"]
        for name in children + ["imagekit.decode", "imagekit.transform", "imagekit.encode"] {
            XCTAssertEqual(try only(name, in: first).parent_span_id, root.span_id, name)
        }
        // The steps, made on a pool thread: in order, inside the request's span.
        let steps = try ["imagekit.decode", "imagekit.transform", "imagekit.encode"].map { try only($0, in: first) }
        for (step, next) in zip(steps, steps.dropFirst()) {
            XCTAssertLessThanOrEqual(step.start, step.end, step.name)
            XCTAssertLessThanOrEqual(step.end, next.start, "\(step.name) ends before \(next.name) starts")
        }
        XCTAssertLessThanOrEqual(root.start, steps[0].start)
        XCTAssertLessThanOrEqual(steps[2].end, root.end)
        let fetch = try only("imagekit.fetch", in: first)
        XCTAssertLessThanOrEqual(fetch.end, steps[0].start, "the source is fetched before it is decoded")
        let client = try XCTUnwrap(first.first { $0.kind == "CLIENT" })
        XCTAssertEqual(client.parent_span_id, fetch.span_id)
        XCTAssertEqual(client.attributes["http.response.status_code"], .int(200))
        XCTAssertEqual(originTraceparent, "00-\(traceID)-\(client.span_id)-01", "the origin saw the fetch's span")
        XCTAssertEqual(first.count, 7, "server, lookup, fetch, GET, decode, transform, encode: \(first.map(\.name))")
        XCTAssertFalse(first.contains { $0.name == "imagekit.trim" }, "a step with nothing to do makes no span")

        // The second came without a traceparent: a trace of its own, rooted at its server span.
        let second = try XCTUnwrap(traces.first { $0.key != traceID }?.value)
        let secondRoot = try XCTUnwrap(second.first { $0.kind == "SERVER" })
        XCTAssertEqual(secondRoot.parent_span_id, "")
        XCTAssertTrue(second.allSatisfy { $0.span_id == secondRoot.span_id || !$0.parent_span_id.isEmpty })
    }

    /// Without `--otel-endpoint` (nor `OTEL_EXPORTER_OTLP_ENDPOINT`) no tracer is bootstrapped:
    /// the origin gets no `traceparent`, even when the request carried one.
    func testWithoutAnEndpointNothingIsPropagated() throws {
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        origin.route("/a.jpg", .init(headers: [("Content-Type", "image/jpeg")], body: ImageServiceTests.jpeg))
        let server = try ServeProcess(
            ["--allow-unsafe", "--allow-address", "127.0.0.1/32"],
            environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ""])
        defer { server.stop() }
        let answer = try server.request(
            "/unsafe/64x64/127.0.0.1:\(origin.port)/a.jpg",
            headers: ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
        XCTAssertEqual(answer.status, 200)
        XCTAssertNil(origin.headers(of: "/a.jpg")?.first(name: "traceparent"))
    }
}

/// Tests/otel/otlp_receiver.py run with the reference venv's Python (`make test` installs
/// opentelemetry-proto there), on 127.0.0.1.
final class OTLPReceiver: @unchecked Sendable {
    let process = Process()
    let output: URL
    private(set) var port = 0

    init() throws {
        let python = try XCTUnwrap(
            ProcessInfo.processInfo.environment["IMAGEKIT_REFERENCE_PYTHON"],
            "IMAGEKIT_REFERENCE_PYTHON is not set: run the tests with `make test`, which prepares the reference venv")
        output = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-\(UUID().uuidString).jsonl")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("otel/otlp_receiver.py")
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path, output.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // The first line: `listening PORT`.
        var line = Data()
        while let byte = try pipe.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != 10 {
            line.append(first)
        }
        port = try XCTUnwrap(Int(String(decoding: line, as: UTF8.self).split(separator: " ").last ?? ""))
    }

    /// The spans received, once `isComplete` says so (10 s at most).
    func spans(until isComplete: ([ServeTracingTests.ReceivedSpan]) -> Bool) throws
        -> [ServeTracingTests.ReceivedSpan]
    {
        let deadline = Date().addingTimeInterval(10)
        var spans: [ServeTracingTests.ReceivedSpan] = []
        repeat {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            spans = try text.split(separator: "\n").map {
                try JSONDecoder().decode(ServeTracingTests.ReceivedSpan.self, from: Data($0.utf8))
            }
            if isComplete(spans) { return spans }
            usleep(50_000)
        } while Date() < deadline
        XCTFail("the receiver got \(spans.count) spans: \(spans.map(\.name))")
        return spans
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: output)
    }
}
#endif
