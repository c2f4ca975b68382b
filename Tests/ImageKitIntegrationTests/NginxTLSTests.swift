import Foundation
import XCTest

@testable import ImageKit

/// TLS and HTTP/2 against a real nginx (installed by `make deps`) on a loopback port, with a
/// self-signed certificate made by `openssl` at test time.
final class NginxTLSTests: XCTestCase {
    var directory: URL!
    var nginx: Process?
    var port = 0

    static func which(_ tool: String) -> String? {
        for directory in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"] {
            let path = directory + "/" + tool
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A port nothing listens on right now (bound to port 0, then released).
    static func freePort() -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    override func setUpWithError() throws {
        guard let nginxPath = Self.which("nginx"), let openssl = Self.which("openssl") else {
            XCTFail("nginx and openssl are needed (make deps installs them)")
            throw XCTSkip("no nginx")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("imagekit-nginx-\(UUID().uuidString)")
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for index in 0..<20 {
            try Data(repeating: UInt8(index), count: 20_000).write(to: root.appendingPathComponent("\(index).bin"))
        }
        let status = try Self.run(
            openssl,
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", directory.appendingPathComponent("key.pem").path,
                "-out", directory.appendingPathComponent("cert.pem").path,
            ])
        XCTAssertEqual(status, 0, "openssl req")
        port = Self.freePort()
        let d = directory.path
        let config = """
            worker_processes 1;
            daemon off;
            user root;
            pid \(d)/nginx.pid;
            error_log \(d)/error.log;
            events { worker_connections 256; }
            http {
                access_log \(d)/access.log combined;
                log_format connections '$connection $request';
                access_log \(d)/connections.log connections;
                client_body_temp_path \(d)/tmp-body;
                proxy_temp_path \(d)/tmp-proxy;
                fastcgi_temp_path \(d)/tmp-fastcgi;
                uwsgi_temp_path \(d)/tmp-uwsgi;
                scgi_temp_path \(d)/tmp-scgi;
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(d)/cert.pem;
                    ssl_certificate_key \(d)/key.pem;
                    root \(d)/www;
                }
            }
            """
        try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginxPath)
        process.arguments = ["-p", d, "-c", d + "/nginx.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        nginx = process
        // Wait until it accepts connections.
        for _ in 0..<100 {
            if FileManager.default.fileExists(atPath: d + "/nginx.pid") { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertTrue(process.isRunning, "nginx started (see \(d)/error.log)")
    }

    override func tearDown() {
        nginx?.terminate()
        nginx?.waitUntilExit()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func url(_ name: String) -> URL { URL(string: "https://127.0.0.1:\(port)/\(name)")! }

    func testSelfSignedCertificateFailsByDefaultAndPassesWhenAllowed() async throws {
        do {
            _ = try await ImageDownloader().load(url("0.bin"))
            XCTFail("a self-signed certificate must not verify")
        } catch {
            XCTAssertEqual(error.code, .secureConnectionFailed, "\(error)")
            XCTAssertFalse(error.isTransient)
        }
        let insecure = ImageDownloader(configuration: ImageDownloaderConfiguration(allowsInvalidSSLCertificates: true))
        let response = try await insecure.load(url("0.bin"))
        XCTAssertEqual(response.data.count, 20_000)
        XCTAssertEqual(response.metrics.httpVersion, "2")
    }

    func testTwentyConcurrentTransfersShareOneHTTP2Connection() async throws {
        // Several network threads: HTTPS to one host must still stay on one of them.
        let downloader = ImageDownloader(
            configuration: ImageDownloaderConfiguration(
                maxConcurrentDownloads: 20,
                allowsInvalidSSLCertificates: true, networkThreads: 3))
        let urls = (0..<20).map { url("\($0).bin") }
        let results = await withTaskGroup(of: TransferMetrics?.self) { group in
            for target in urls { group.addTask { try? await downloader.load(target).metrics } }
            return await group.reduce(into: [TransferMetrics?]()) { $0.append($1) }
        }
        XCTAssertEqual(results.compactMap { $0 }.count, 20)
        XCTAssertTrue(results.allSatisfy { $0?.httpVersion == "2" })
        try await Task.sleep(nanoseconds: 300_000_000)  // nginx writes its log after the response
        let log = try String(contentsOf: directory.appendingPathComponent("connections.log"), encoding: .utf8)
        let connections = Set(log.split(separator: "\n").map { $0.split(separator: " ")[0] })
        XCTAssertEqual(log.split(separator: "\n").count, 20)
        XCTAssertEqual(connections.count, 1, "all 20 requests multiplexed on one connection: \(connections)")
    }

    /// The transport settings against a real TLS server: a CA bundle holding its certificate
    /// verifies it; a pinned public key must match.
    func testCABundleAndPinnedPublicKey() async throws {
        let certificate = directory.appendingPathComponent("cert.pem").path
        let publicKey = directory.appendingPathComponent("pub.pem").path
        XCTAssertEqual(
            try Self.run(
                try XCTUnwrap(Self.which("openssl")),
                ["x509", "-in", certificate, "-pubkey", "-noout", "-out", publicKey]), 0)
        var configuration = ImageDownloaderConfiguration()
        configuration.caBundlePath = certificate
        let trusting = ImageDownloader(configuration: configuration)
        let trusted = try await trusting.load(url("1.bin"))
        XCTAssertEqual(trusted.data.count, 20_000, "the bundle's certificate verifies")

        configuration.pinnedPublicKey = publicKey
        let pinned = try await ImageDownloader(configuration: configuration).load(url("2.bin"))
        XCTAssertEqual(pinned.data.count, 20_000)
        configuration.pinnedPublicKey = "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        do {
            _ = try await ImageDownloader(configuration: configuration).load(url("3.bin"))
            XCTFail("a wrong pin must fail")
        } catch {
            XCTAssertEqual(error.code, .secureConnectionFailed, "\(error)")
        }
        configuration.pinnedPublicKey = nil
        configuration.caBundlePath = directory.appendingPathComponent("key.pem").path  // no certificate in it
        do {
            _ = try await ImageDownloader(configuration: configuration).load(url("4.bin"))
            XCTFail("a bundle without the certificate must fail")
        } catch {
            XCTAssertEqual(error.code, .secureConnectionFailed, "\(error)")
        }
    }
}
