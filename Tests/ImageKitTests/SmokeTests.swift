import XCTest
@testable import ImageKit
final class SmokeTests: XCTestCase { func testVersion() { XCTAssertFalse(ImageKit.version.isEmpty) } }
