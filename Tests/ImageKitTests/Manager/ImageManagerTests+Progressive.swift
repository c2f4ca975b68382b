import Foundation
import XCTest

@testable import ImageKit

extension ImageManagerTests {
    // MARK: Progressive and events

    func testProgressiveLoadDeliversPreviewsThenTheFinalImage() async throws {
        let manager = makeManager()
        let progressive = try ImageCodersManager.shared.encode(
            TestImages.still(TestImages.gradient(width: 640, height: 480), format: .jpeg), as: .jpeg,
            options: .init(quality: 0.9, progressive: true))
        loader.answer("/prog.jpg", .data(progressive, chunks: 12, chunkDelay: 0.05))
        var previews = 0
        var progressEvents = 0
        var final: ImageLoadResult?
        for try await event in manager.imageEvents(for: url("/prog.jpg"), options: .progressiveLoad) {
            switch event {
            case .preview(let image):
                XCTAssertNil(final, "no preview after the final image")
                XCTAssertTrue(image.isPreview)
                previews += 1
            case .progress: progressEvents += 1
            case .result(let result): final = result
            case .notModified: XCTFail("not a revalidation")
            }
        }
        XCTAssertGreaterThan(previews, 0)
        XCTAssertEqual(progressEvents, 12)
        XCTAssertEqual(final?.image?.width, 640)
        XCTAssertFalse(final?.image?.isPreview ?? true)
    }

    func testStringKeysAndURLsAtCacheCallSites() async throws {
        let urlString = "https://example.com/string-key.png"
        let image = TestImages.still(TestImages.gradient(width: 8, height: 8))
        try await cache.store(image, data: nil, forKey: urlString)
        let byString = try await cache.query(urlString)
        XCTAssertNotNil(byString.image)
        let byURL = try await cache.query(URL(string: urlString)!)
        XCTAssertNotNil(byURL.image)
    }
}
