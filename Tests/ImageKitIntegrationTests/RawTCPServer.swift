import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that answers every connection with whatever `respond` writes: raw
/// bytes, for responses no HTTP library would send (garbage headers, endless bodies, resets).
/// Serves on 127.0.0.1, port 0; `stop()` closes it.
final class RawTCPServer: @unchecked Sendable {
    // Invariant: `listener` is set once in init; `stopped` is read and written under `lock`.
    private let listener: Int32
    let port: Int
    private let lock = NSLock()
    private var stopped = false

    /// `respond` gets a connected socket after the request head was read, and closes nothing:
    /// the server closes the socket after it returns.
    init(respond: @escaping @Sendable (_ socket: Int32) -> Void) throws {
        let listener = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { return }  // closed by stop()
                if isStopped { close(connection); return }
                Thread.detachNewThread {
                    var head = [UInt8](repeating: 0, count: 8192)
                    _ = recv(connection, &head, head.count, 0)
                    var noSignal: Int32 = 1
                    setsockopt(connection, SOL_SOCKET, SO_KEEPALIVE, &noSignal, socklen_t(MemoryLayout<Int32>.size))
                    respond(connection)
                    close(connection)
                }
            }
        }
    }

    private var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }

    func stop() {
        lock.lock(); stopped = true; lock.unlock()
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Writes all of `bytes`; false once the peer has gone.
    @discardableResult
    static func write(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    static func write(_ socket: Int32, _ text: String) -> Bool { write(socket, Array(text.utf8)) }
}
