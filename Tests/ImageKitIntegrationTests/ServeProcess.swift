import Foundation
import ImageKit
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `imagekit serve` run as a user would: a child process on 127.0.0.1, port 0, its standard
/// output collected (the startup line tells the port; the access log follows).
final class ServeProcess: @unchecked Sendable {
    // Invariant: `collected` is guarded by `lock`.
    let process = Process()
    private let lock = NSLock()
    private var collected = Data()
    private(set) var port = 0

    /// Starts the service and waits for its startup line (20 s at most).
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = try XCTUnwrap(ImageKitTool.url, "the imagekit tool is not built beside the tests")
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment, uniquingKeysWith: { $1 })
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { [self] handle in
            let data = handle.availableData
            lock.lock(); collected.append(data); lock.unlock()
        }
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning {
            if let line = output.split(separator: "\n").first(where: {
                $0.hasPrefix("imagekit serve: listening on http://")
            }),
                let port = line.split(separator: ":").dropFirst(3).first.flatMap({ Int($0.prefix { $0.isNumber }) })
            {
                self.port = port
                return
            }
            usleep(20_000)
        }
        process.terminate()
        XCTFail("imagekit serve did not start: \(output)")
        throw POSIXError(.ETIMEDOUT)
    }

    /// Everything the process printed so far.
    var output: String {
        lock.lock(); defer { lock.unlock() }
        return String(decoding: collected, as: UTF8.self)
    }

    /// Sends `signal` and waits for the exit (30 s at most); returns the exit status.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -1
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// One request on its own connection (`Connection: close`), read to the end.
    func request(_ path: String, method: String = "GET", headers: [String: String] = [:], body: [UInt8] = [])
        throws -> HTTPAnswer
    {
        try HTTPAnswer.fetch(port: port, path: path, method: method, headers: headers, body: body)
    }
}

/// A response read off a socket: the status line, headers (names lowercased) and body.
struct HTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    var json: [String: String] {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: String]) ?? [:]
    }

    static func fetch(
        port: Int, path: String, method: String = "GET", headers: [String: String] = [:], body: [UInt8] = []
    ) throws -> HTTPAnswer {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        let received = try exchange(port: port, Array((head + "\r\n").utf8) + body)
        guard let end = received.indices.dropLast(3).first(where: { received[$0...$0 + 3] == [13, 10, 13, 10] }) else {
            throw POSIXError(.EBADMSG)
        }
        let lines = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw POSIXError(.EBADMSG)
        }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPAnswer(status: status, headers: fields, body: Array(received[(end + 4)...]))
    }

    /// Sends `bytes` on a new loopback connection and reads until the server closes it (bytes
    /// that hold several requests test pipelining; the last should say `Connection: close`).
    static func exchange(port: Int, _ bytes: [UInt8]) throws -> [UInt8] {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        guard RawTCPServer.write(socket, bytes) else { throw POSIXError(.EPIPE) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return received
    }
}
