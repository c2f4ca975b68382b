import Foundation
import XCTest

@testable import ImageKit

/// The downloader against servers that misbehave: every load ends with the body or a typed
/// error, never a crash, a hang or unbounded memory.
final class DownloaderFaultTests: XCTestCase {
    static let body = [UInt8]((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    func load(_ url: URL, maxBodySize: Int? = 256 << 20, timeout: TimeInterval = 5) async -> Result<
        ImageLoadResponse, ImageError
    > {
        let downloader = ImageDownloader(configuration: .init(timeout: timeout, maxBodySize: maxBodySize))
        do { return .success(try await downloader.load(url)) } catch { return .failure(error) }
    }

    func testServerDiesMidBody() async throws {
        let server = try RawTCPServer { socket in
            RawTCPServer.write(socket, "HTTP/1.1 200 OK\r\nContent-Length: \(Self.body.count)\r\n\r\n")
            RawTCPServer.write(socket, Array(Self.body.prefix(50_000)))
        }
        defer { server.stop() }
        guard case .failure(let error) = await load(server.url("/a.jpg")) else { return XCTFail("a cut body loaded") }
        XCTAssertEqual(error.code, .connectionLost)
        XCTAssertTrue(error.isTransient)
    }

    func testRandomResetsEndEveryLoadWithItsBytesOrATypedError() async throws {
        let server = try RawTCPServer { socket in
            let cut = Int.random(in: 0...3) == 0 ? Int.random(in: 0..<Self.body.count) : nil
            RawTCPServer.write(
                socket, "HTTP/1.1 200 OK\r\nContent-Length: \(Self.body.count)\r\nConnection: close\r\n\r\n")
            if let cut {
                RawTCPServer.write(socket, Array(Self.body.prefix(cut)))
                var linger = linger(l_onoff: 1, l_linger: 0)  // close with RST
                setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            } else {
                RawTCPServer.write(socket, Self.body)
            }
        }
        defer { server.stop() }
        let downloader = ImageDownloader(configuration: .init(timeout: 5))
        let outcomes = await withTaskGroup(of: Result<Int, ImageError>.self) { group in
            for index in 0..<40 {
                group.addTask {
                    do throws(ImageError) {
                        return .success(try await downloader.load(server.url("/r\(index).jpg")).data.count)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.count, 40)
        for outcome in outcomes {
            switch outcome {
            case .success(let count): XCTAssertEqual(count, Self.body.count)
            case .failure(let error):
                XCTAssertTrue([ImageError.Code.connectionLost, .networkError].contains(error.code), "\(error)")
            }
        }
    }

    func testGarbageHeaders() async throws {
        let server = try RawTCPServer { socket in
            RawTCPServer.write(socket, [UInt8]((0..<4096).map { _ in UInt8.random(in: 0...255) }))
        }
        defer { server.stop() }
        guard case .failure(let error) = await load(server.url("/g.jpg")) else { return XCTFail("garbage loaded") }
        XCTAssertFalse(error.message.isEmpty)
    }

    func testHugeContentLengthIsRefusedAtOnce() async throws {
        let server = try RawTCPServer { socket in
            RawTCPServer.write(socket, "HTTP/1.1 200 OK\r\nContent-Length: 2000000000\r\n\r\n")
            for _ in 0..<100 { if !RawTCPServer.write(socket, Self.body) { return } }
        }
        defer { server.stop() }
        guard case .failure(let error) = await load(server.url("/big.jpg"), maxBodySize: 1 << 20) else {
            return XCTFail("2 GB accepted")
        }
        XCTAssertEqual(error.code, .responseTooLarge)
    }

    func testEndlessChunkedBodyStopsAtTheCap() async throws {
        let server = try RawTCPServer { socket in
            RawTCPServer.write(socket, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = Array(String(Self.body.count, radix: 16).utf8) + [13, 10] + Self.body + [13, 10]
            for _ in 0..<10_000 { if !RawTCPServer.write(socket, chunk) { return } }  // bounded: 2 GB at most
        }
        defer { server.stop() }
        guard case .failure(let error) = await load(server.url("/endless.jpg"), maxBodySize: 4 << 20) else {
            return XCTFail("endless body accepted")
        }
        XCTAssertEqual(error.code, .responseTooLarge)
    }

    func testGzipBombIsCappedOnItsDecodedSize() async throws {
        // 64 MB of zeros compress to about 64 KB; the cap is 4 MB.
        let bomb = try Self.gzip(Data(count: 64 << 20))
        XCTAssertLessThan(bomb.count, 200_000)
        let server = try RawTCPServer { socket in
            RawTCPServer.write(
                socket, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\n\r\n")
            RawTCPServer.write(socket, Array(bomb))
        }
        defer { server.stop() }
        guard case .failure(let error) = await load(server.url("/bomb.jpg"), maxBodySize: 4 << 20) else {
            return XCTFail("gzip bomb accepted")
        }
        XCTAssertEqual(error.code, .responseTooLarge)
    }

    /// gzip's own tool (part of every Debian system) compresses the test's payload.
    static func gzip(_ data: Data) throws -> Data {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("gzip-\(UUID().uuidString)")
        try data.write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-c", input.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return output
    }
}
