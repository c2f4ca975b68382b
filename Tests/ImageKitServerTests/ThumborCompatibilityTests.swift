import Foundation
import XCTest

@testable import ImageKitServer

/// Output sizes and formats against a real thumbor 7.8 (RESPECT_ORIENTATION on) asked for the
/// same URLs in the same `make test` run: `Tests/thumbor/sizes.py` writes its answers to the file
/// `IMAGEKIT_THUMBOR_SIZES` names (the Makefile sets it). Rows thumbor answered 500 for (`orig`
/// beside a 0) are answered here with the source's size, and listed.
final class ThumborCompatibilityTests: XCTestCase {
    struct Row: Decodable {
        var path: String
        var source: String
        var sourceWidth: Int
        var sourceHeight: Int
        var status: Int
        var width: Int?
        var height: Int?
        var format: String?
        /// thumbor's answer saved for the pixel comparison, when it was.
        var file: String?
    }

    func rows() throws -> [Row] {
        let environment = ProcessInfo.processInfo.environment["IMAGEKIT_THUMBOR_SIZES"]
        let path = try XCTUnwrap(
            environment, "IMAGEKIT_THUMBOR_SIZES is not set: run the tests with `make test`, which asks thumbor first")
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        return try lines.map { try JSONDecoder().decode(Row.self, from: Data($0.utf8)) }
    }

    func testSizesAndFormatsEqualThumbors() throws {
        let rows = try rows()
        XCTAssertGreaterThan(rows.count, 1000, "the matrix is complete")
        var compared = 0
        var thumborFailures = Set<String>()
        for row in rows where !row.path.hasPrefix("trim") {  // trim needs the pixels: ThumborPipelineTests
            let url = "/unsafe/" + row.path + "127.0.0.1:9/" + row.source
            let request = try ImageRequest.parse(path: url)
            let plan = GeometryPlan(
                sourceWidth: row.sourceWidth, sourceHeight: row.sourceHeight, sourceIsGIF: row.source.hasSuffix(".gif"),
                request: request)
            guard row.status == 200, let width = row.width, let height = row.height else {
                thumborFailures.insert(row.path)
                XCTAssertGreaterThan(plan.outputWidth, 0, url)
                XCTAssertGreaterThan(plan.outputHeight, 0, url)
                continue
            }
            XCTAssertEqual(
                "\(plan.outputWidth)x\(plan.outputHeight)", "\(width)x\(height)",
                "\(url) (source \(row.sourceWidth)x\(row.sourceHeight))")
            let source: ImageOperations.Format =
                row.source.hasSuffix(".png") ? .png : row.source.hasSuffix(".gif") ? .gif : .jpeg
            let format = request.operations.outputFormat(
                sourceFormat: source, keepsGIF: true, hasAlpha: source == .png)
            XCTAssertEqual(format.rawValue, row.format, url)
            compared += 1
        }
        XCTAssertGreaterThan(compared, 1000)
        // thumbor 7.8 fails (500) on `orig` beside a 0; these answer with the image's own size.
        XCTAssertTrue(
            thumborFailures.allSatisfy { $0.contains("origx0") || $0.contains("0xorig") }, "\(thumborFailures.sorted())"
        )
    }
}
