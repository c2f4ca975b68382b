#if Serve
import Foundation
import ImageKit
import XCTest

/// `POST /admin/purge` on one node: a changed original is served after a purge — from the
/// results in memory and the results on disk that a restart left — with one more origin fetch;
/// other sources untouched; a wrong or missing key changes nothing and says nothing; without
/// `--admin-key` the route does not exist.
final class PurgeTests: XCTestCase {
    var origin: TestHTTPServer!
    var directory: URL!
    let key = "admin-key-for-tests"

    override func setUpWithError() throws {
        origin = try TestHTTPServer()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("purge-\(UUID())")
        try serveSource("/a.jpg", width: 400, height: 300, etag: "a-v1")
        try serveSource("/b.jpg", width: 300, height: 300, etag: "b-v1")
    }

    override func tearDown() {
        origin.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func serveSource(_ path: String, width: Int, height: Int, etag: String) throws {
        let jpeg = try StoreSourceTests.jpeg(width: width, height: height)
        origin.route(
            path, .init(headers: [("Content-Type", "image/jpeg"), ("ETag", "\"\(etag)\"")], body: Array(jpeg)))
    }

    private func start(adminKey: String?) throws -> ServeProcess {
        var arguments = [
            "--allow-unsafe", "--allow-address", "127.0.0.1/32", "--cache-dir", directory.path, "--source-tags",
        ]
        if let adminKey { arguments += ["--admin-key", adminKey] }
        return try ServeProcess(arguments)
    }

    /// The size of the image `path` answers.
    private func size(_ server: ServeProcess, _ path: String, line: UInt = #line) throws -> PixelSize {
        let answer = try server.request(path)
        XCTAssertEqual(answer.status, 200, "\(path): \(answer.json)", line: line)
        let image = try ImageCodersManager.shared.decode(Data(answer.body))
        return PixelSize(width: image.width, height: image.height)
    }

    private func purge(_ server: ServeProcess, _ source: String, authorization: String?) throws -> HTTPAnswer {
        let body = try JSONSerialization.data(withJSONObject: ["source": source])
        return try server.request(
            "/admin/purge", method: "POST",
            headers: authorization.map { ["Authorization": $0, "Content-Type": "application/json"] } ?? [:],
            body: Array(body))
    }

    func testPurgeServesTheChangedOriginalAndLeavesTheRest() throws {
        let host = "127.0.0.1:\(origin.port)"
        let variants = [
            "/unsafe/100x0/\(host)/a.jpg", "/unsafe/50x50/\(host)/a.jpg", "/insecure/w:80/plain/http://\(host)/a.jpg",
        ]
        var server = try start(adminKey: key)
        XCTAssertEqual(try size(server, variants[0]), PixelSize(width: 100, height: 75))
        XCTAssertEqual(try size(server, variants[1]), PixelSize(width: 50, height: 50))
        XCTAssertEqual(try size(server, variants[2]), PixelSize(width: 80, height: 60))
        XCTAssertEqual(try size(server, "/unsafe/100x0/\(host)/b.jpg"), PixelSize(width: 100, height: 100))
        XCTAssertEqual(origin.requests(to: "/a.jpg"), 1)
        let tag = try server.request(variants[0]).headers["surrogate-key"]
        XCTAssertNotNil(tag)

        // The first variant stays in memory; a restart leaves the others on disk only.
        server.stop()
        server = try start(adminKey: key)
        XCTAssertEqual(try size(server, variants[0]), PixelSize(width: 100, height: 75))
        try serveSource("/a.jpg", width: 200, height: 200, etag: "a-v2")
        XCTAssertEqual(try size(server, variants[0]), PixelSize(width: 100, height: 75), "cached until purged")

        // No key, a wrong key, another scheme: 403 and nothing else; nothing changes.
        for authorization in [
            nil, "Bearer wrong", "Basic \(Data("admin:\(key)".utf8).base64EncodedString())", "Bearer",
        ] {
            let refused = try purge(server, "http://\(host)/a.jpg", authorization: authorization)
            XCTAssertEqual(refused.status, 403, "\(authorization ?? "none")")
            XCTAssertEqual(refused.json, ["error": "forbidden", "message": "not allowed"])
        }
        XCTAssertEqual(try size(server, variants[0]), PixelSize(width: 100, height: 75))
        XCTAssertEqual(origin.requests(to: "/a.jpg"), 1)

        // A malformed body is a 400 once the key is right.
        let malformed = try server.request(
            "/admin/purge", method: "POST", headers: ["Authorization": "Bearer \(key)"], body: Array("{}".utf8))
        XCTAssertEqual(malformed.status, 400)

        // thumbor's bare host names the same source as the full URL.
        let purged = try purge(server, "\(host)/a.jpg", authorization: "Bearer \(key)")
        XCTAssertEqual(purged.status, 200, "\(String(decoding: purged.body, as: UTF8.self))")
        let answer = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(purged.body)) as? [String: Any])
        XCTAssertEqual(answer["source"] as? String, "http://\(host)/a.jpg")
        XCTAssertEqual(answer["tag"] as? String, tag)
        let dropped = try XCTUnwrap(answer["dropped"] as? [String])
        XCTAssertEqual(dropped.filter { $0.hasPrefix("source:") }, ["source:http://\(host)/a.jpg"])
        XCTAssertEqual(dropped.filter { $0.hasPrefix("result:") }.count, 1, "\(dropped)")  // the one in memory

        XCTAssertEqual(try size(server, variants[0]), PixelSize(width: 100, height: 100))
        XCTAssertEqual(try size(server, variants[1]), PixelSize(width: 50, height: 50))
        XCTAssertEqual(try size(server, variants[2]), PixelSize(width: 80, height: 80))
        XCTAssertEqual(origin.requests(to: "/a.jpg"), 2, "one fetch for every variant")
        XCTAssertEqual(try size(server, "/unsafe/100x0/\(host)/b.jpg"), PixelSize(width: 100, height: 100))
        XCTAssertEqual(origin.requests(to: "/b.jpg"), 1, "another source is untouched")

        // The purge outlives a restart: results on disk made before it stay stale.
        server.stop()
        server = try start(adminKey: key)
        XCTAssertEqual(try size(server, variants[1]), PixelSize(width: 50, height: 50))
        XCTAssertEqual(try size(server, variants[2]), PixelSize(width: 80, height: 80))
        server.stop()
    }

    func testWithoutAnAdminKeyThereIsNoRoute() throws {
        let server = try start(adminKey: nil)
        defer { server.stop() }
        let answer = try purge(server, "http://127.0.0.1:\(origin.port)/a.jpg", authorization: "Bearer \(key)")
        XCTAssertEqual(answer.status, 404)
        XCTAssertEqual(answer.json["error"], "notFound")
    }
}
#endif
