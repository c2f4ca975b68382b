import Foundation
@testable import ImageKitServer
import XCTest

/// imgproxy's resizing types as its documentation states them (no imgproxy binary is at hand
/// to compare with, unlike thumbor): a 640×480 source unless said otherwise.
final class ImgproxyGeometryTests: XCTestCase {
    func size(_ options: String, _ width: Int = 640, _ height: Int = 480) throws -> String {
        let request = try ImageRequest.parse(path: options.isEmpty ? "/_/plain/http://example.com/a.jpg" : "/_/\(options)/plain/http://example.com/a.jpg")
        let plan = GeometryPlan(sourceWidth: width, sourceHeight: height, request: request)
        return "\(plan.outputWidth)x\(plan.outputHeight)"
    }

    func testResizingTypes() throws {
        XCTAssertEqual(try size("rs:fit:300:300"), "300x225")
        XCTAssertEqual(try size("rs:fit:300:0"), "300x225")
        XCTAssertEqual(try size("rs:fit:0:120"), "160x120")
        XCTAssertEqual(try size("rs:fill:300:300"), "300x300")
        XCTAssertEqual(try size("rs:fill:300:100"), "300x100")
        XCTAssertEqual(try size("rs:force:300:100"), "300x100")
        XCTAssertEqual(try size("rs:fit:1000:1000"), "640x480", "no enlarging by default")
        XCTAssertEqual(try size("rs:fit:1000:1000:1"), "1000x750")
        XCTAssertEqual(try size("rs:fill:1000:1000"), "640x480", "fill without enlarge does not keep the box shape (fill-down does)")
        XCTAssertEqual(try size("rs:fill-down:1000:500"), "640x320")
        XCTAssertEqual(try size("rs:fit:1000:1000:0:1"), "1000x1000", "extend pads to the box")
        XCTAssertEqual(try size("rs:auto:300:200"), "300x200", "both landscape: fill")
        XCTAssertEqual(try size("rs:auto:200:300"), "200x150", "orientations differ: fit")
        XCTAssertEqual(try size("rs:fit:300:300/dpr:2"), "600x450")
        XCTAssertEqual(try size("w:200/z:0.5"), "100x75")
        XCTAssertEqual(try size("rs:fit:100:100/mw:200"), "200x150")
        XCTAssertEqual(try size("c:0.5:0.5/rs:fit:100:100"), "100x75")
        XCTAssertEqual(try size("c:320:100"), "320x100")
        XCTAssertEqual(try size("rs:fit:300:300/pd:10:20"), "340x245")
        XCTAssertEqual(try size("rs:fit:300:300/rot:90"), "225x300")
        XCTAssertEqual(try size(""), "640x480")
    }
}
