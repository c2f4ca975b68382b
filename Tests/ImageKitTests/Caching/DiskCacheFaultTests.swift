import Foundation
import XCTest

@testable import ImageKit

/// The disk cache under real faults: a full file system and one made read-only mid-run (small
/// tmpfs mounts, which need root: CI and the development machines run as root), and a process
/// killed in the middle of a burst of stores (DiskCacheKillTests, among the integration tests:
/// it serves the images over loopback HTTP, since file: loads are not cached on disk). Afterwards every readable entry is whole and
/// correct, only the entries being written are lost, and the cache keeps working.
final class DiskCacheFaultTests: XCTestCase {
    var mountPoint: TemporaryDirectory!
    var mounted = false

    override func tearDown() {
        if mounted { _ = Self.run("/bin/umount", ["-l", mountPoint.path]) }
        mountPoint?.remove()
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A tmpfs of `kilobytes` at a fresh directory.
    func mountTmpfs(kilobytes: Int) throws -> URL {
        guard getuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root (run make test as root, as CI does)") }
        mountPoint = TemporaryDirectory("tmpfs")
        let status = Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", mountPoint.path])
        try XCTSkipIf(status != 0, "mount -t tmpfs failed (status \(status)): no mount namespace rights here")
        mounted = true
        return mountPoint.url
    }

    static func entry(_ index: Int, size: Int = 100_000) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) })
    }

    func testFullDiskFailsTypedAndKeepsWhatWasStored() throws {
        let root = try mountTmpfs(kilobytes: 1024)
        let cache = try DiskCache(directory: root, configuration: .init(sweepsAtOpen: false))
        var stored: [Int] = []
        var failure: ImageError?
        for index in 0..<40 {
            do {
                try cache.store(Self.entry(index), forKey: "https://e.example/\(index).jpg")
                stored.append(index)
            } catch {
                failure = error
                break
            }
        }
        XCTAssertEqual(failure?.code, .ioError, "a full disk is an ioError")
        XCTAssertGreaterThan(stored.count, 3)
        for index in stored {
            XCTAssertEqual(cache.data(forKey: "https://e.example/\(index).jpg"), Self.entry(index), "entry \(index)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.entriesDirectory)
        XCTAssertFalse(names.contains { $0.hasPrefix(".tmp-") }, "a failed write leaves no temporary file")
        // Room again: the cache goes on working.
        for index in stored.prefix(3) { cache.remove("https://e.example/\(index).jpg") }
        try cache.store(Self.entry(99), forKey: "https://e.example/99.jpg")
        XCTAssertEqual(cache.data(forKey: "https://e.example/99.jpg"), Self.entry(99))
    }

    func testReadOnlyMidRunThenWritableAgain() throws {
        let root = try mountTmpfs(kilobytes: 4096)
        let cache = try DiskCache(directory: root, configuration: .init(sweepsAtOpen: false))
        for index in 0..<5 { try cache.store(Self.entry(index), forKey: "k\(index).png") }
        XCTAssertEqual(Self.run("/bin/mount", ["-o", "remount,ro", mountPoint.path]), 0)
        XCTAssertThrowsError(try cache.store(Self.entry(9), forKey: "k9.png")) {
            XCTAssertEqual(($0 as? ImageError)?.code, .ioError)
        }
        for index in 0..<5 { XCTAssertEqual(cache.data(forKey: "k\(index).png"), Self.entry(index)) }
        _ = cache.removeExpired()  // a sweep on a read-only disk reports, never traps
        XCTAssertEqual(Self.run("/bin/mount", ["-o", "remount,rw", mountPoint.path]), 0)
        try cache.store(Self.entry(9), forKey: "k9.png")
        XCTAssertEqual(cache.data(forKey: "k9.png"), Self.entry(9))
        XCTAssertEqual(cache.data(forKey: "k0.png"), Self.entry(0))
    }

    func testManagerStillDeliversOnAFullDisk() async throws {
        let root = try mountTmpfs(kilobytes: 64)
        let loader = MockLoader()
        let big = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 700, height: 500), format: .jpeg),
            as: .jpeg, options: .init(quality: 1))
        XCTAssertGreaterThan(big.count, 64 * 1024)
        loader.answer("/big.jpg", .data(big))
        let cache = try ImageCache(directory: root, configuration: .init(disk: .init(sweepsAtOpen: false)))
        let manager = ImageManager(cache: cache, loader: loader)
        let result = try await manager.loadImage(URL(string: "mock://host/big.jpg")!, options: .waitStoreCache)
        XCTAssertEqual(result.image?.width, 700)
        XCTAssertEqual(result.storeError?.code, .ioError)
    }
}
