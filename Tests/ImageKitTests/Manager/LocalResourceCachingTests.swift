import Foundation
import XCTest

@testable import ImageKit

/// `file:` and `data:` loads: decoded in memory, never copied to the disk cache, and a file's
/// memory entry is for one version of the file.
final class LocalResourceCachingTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("local-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func png(_ level: UInt8, size: Int) throws -> Data {
        let buffer = try PixelBuffer(width: size, height: size)
        buffer.baseAddress.initializeMemory(as: UInt8.self, repeating: level, count: buffer.byteCount)
        return try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png),
            as: .png, options: .default)
    }

    func testLocalLoadsAreNotWrittenToDiskAndAnEditedFileIsNotStale() async throws {
        let cache = try ImageCache(
            directory: directory.appendingPathComponent("cache"), configuration: .init(disk: .init(sweepsAtOpen: false))
        )
        let manager = ImageManager(cache: cache)
        let file = directory.appendingPathComponent("a.png")
        try png(10, size: 8).write(to: file)
        let first = try await manager.loadImage(file, options: .waitStoreCache)
        XCTAssertEqual(first.image?.width, 8)
        let second = try await manager.loadImage(file)
        XCTAssertEqual(second.cacheType, .memory, "the same file version is a memory hit")
        XCTAssertEqual(cache.diskCache.count, 0, "a file: load is never copied to the disk cache")

        // Edit the file (another size, later modification time): the new pixels are loaded.
        try png(200, size: 16).write(to: file)
        let edited = try await manager.loadImage(file)
        XCTAssertEqual(edited.image?.width, 16)
        XCTAssertEqual(edited.cacheType, .none)

        let dataURL = URL(string: "data:image/png;base64," + (try png(30, size: 4)).base64EncodedString())!
        let inline = try await manager.loadImage(dataURL, options: .waitStoreCache)
        XCTAssertEqual(inline.image?.width, 4)
        XCTAssertEqual(cache.diskCache.count, 0, "a data: load is never copied to the disk cache")
    }
}
