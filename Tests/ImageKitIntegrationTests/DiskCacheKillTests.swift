import Foundation
import XCTest

@testable import ImageKit

/// A process killed with SIGKILL in the middle of a burst of disk-cache stores: every entry
/// that reads back is whole and correct, only those being written are lost, and the cache keeps
/// working. The images come from the in-process server (file: loads are never cached on disk).
final class DiskCacheKillTests: XCTestCase {
    func testKilledInTheMiddleOfABurstOfStores() throws {
        let tool = try XCTUnwrap(ImageKitTool.url, "the imagekit tool is not built beside the tests")
        let server = try TestHTTPServer()
        defer { server.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("sigkill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let buffer = try PixelBuffer(width: 64, height: 48)
        for y in 0..<48 {
            for x in 0..<64 {
                buffer.baseAddress.storeBytes(
                    of: UInt32(x * 4 + y * 1000), toByteOffset: (y * 64 + x) * 4, as: UInt32.self)
            }
        }
        let jpeg = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .jpeg),
            as: .jpeg, options: .default)
        var bodies: [String: [UInt8]] = [:]
        var urls: [URL] = []
        for index in 0..<1500 {
            // JPEG ignores bytes after its end marker: every file is distinct and decodable.
            var data = Array(jpeg)
            data.append(contentsOf: Array(String(index).utf8) + [UInt8](repeating: UInt8(index % 251), count: 30_000))
            bodies["/\(index).jpg"] = data
            urls.append(server.url("/\(index).jpg"))
        }
        let served = bodies
        for path in served.keys {
            server.route(path) { head in .init(body: served[String(head.uri.split(separator: "?")[0])] ?? []) }
        }
        let cacheDirectory = work.appendingPathComponent("cache")
        let process = Process()
        process.executableURL = tool
        process.arguments = ["fetch", "--sequential", "--cache-dir", cacheDirectory.path] + urls.map(\.absoluteString)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Kill it once it is well into the burst.
        let entries = cacheDirectory.appendingPathComponent(DiskCache.layoutVersion).path
        for _ in 0..<1000 {
            if ((try? FileManager.default.contentsOfDirectory(atPath: entries))?.count ?? 0) > 50 { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)

        let cache = try DiskCache(directory: cacheDirectory, configuration: .init(sweepsAtOpen: false))
        var whole = 0
        for url in urls {
            guard let data = cache.data(forKey: url.absoluteString) else { continue }
            XCTAssertEqual(Array(data), bodies[url.path], "\(url.lastPathComponent) is not whole")
            whole += 1
        }
        XCTAssertGreaterThan(whole, 20)
        XCTAssertLessThan(whole, urls.count, "the kill came before the end of the burst")
        try cache.store(jpeg, forKey: "after-the-kill.jpg")
        XCTAssertEqual(cache.data(forKey: "after-the-kill.jpg"), jpeg)
    }
}
