import Foundation
import XCTest

@testable import ImageKit

#if canImport(Glibc)
import Glibc
#endif

/// No connection is made from inside an SVG: links to a listener on 127.0.0.1 by every route
/// a document has (an image, a `use`, an XInclude, an external entity, a CSS import) and the
/// listener sees no connection. The file half of the rule is `SVGTests` in ImageKitTests.
final class SVGNetworkTests: XCTestCase {
    func testADocumentConnectsNowhere() throws {
        guard ImageFormat.svg.isDecodingSupported else { throw XCTSkip("built without the SVG trait") }
        let connections = Locked(0)
        let server = try RawTCPServer { socket in
            connections.withLock { $0 += 1 }
            RawTCPServer.write(socket, Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8))
        }
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let bodies = [
            #"<image width="16" height="16" href="\#(base)/a.png"/>"#,
            #"<image width="16" height="16" xlink:href="\#(base)/b.svg"/>"#,
            #"<use href="\#(base)/c.svg#shape"/>"#,
            #"<text y="12"><xi:include href="\#(base)/d.txt" parse="text"/></text>"#,
            #"<style>@import url("\#(base)/e.css"); rect { fill: url(\#(base)/f.svg#paint) }</style><rect width="8" height="8"/>"#,
            #"<rect width="8" height="8" filter="url(\#(base)/g.svg#blur)"/>"#,
        ]
        var documents = bodies.map { body in
            #"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" "#
                + #"xmlns:xi="http://www.w3.org/2001/XInclude" width="16" height="16">"# + body + "</svg>"
        }
        documents.append(
            #"<!DOCTYPE svg [<!ENTITY ext SYSTEM "\#(base)/h.xml">]>"#
                + #"<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><text>&ext;</text></svg>"#)
        for document in documents {
            // Drawn or refused: either way nothing may be fetched.
            _ = try? ImageCodersManager.shared.decode(Data(document.utf8))
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(connections.withLock { $0 }, 0, "a document connected to \(base)")
        // The listener works: a connection of the test's own is counted.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(server.port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        XCTAssertEqual(connected, 0)
        _ = "GET / HTTP/1.0\r\n\r\n".withCString { send(socket, $0, 18, 0) }
        var reply = [UInt8](repeating: 0, count: 64)
        _ = recv(socket, &reply, reply.count, 0)
        close(socket)
        XCTAssertEqual(connections.withLock { $0 }, 1)
    }
}
