import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// The whole pipeline (probe, plan, decode-time thumbnail, crop, resample, canvas, turns,
/// encode) on the sources thumbor was asked about in the same `make test` run: every answer has
/// thumbor's size and format, and its pixels are within 30 dB PSNR of thumbor's where the
/// operations are geometry (thumbor's files in `IMAGEKIT_THUMBOR_IMAGES`).
final class ThumborPipelineTests: XCTestCase {
    func testAnswersMatchThumborsInSizeFormatAndPixels() throws {
        let environment = ProcessInfo.processInfo.environment
        let sizes = try XCTUnwrap(
            environment["IMAGEKIT_THUMBOR_SIZES"], "run the tests with `make test`, which asks thumbor first")
        let images = URL(
            fileURLWithPath: try XCTUnwrap(environment["IMAGEKIT_THUMBOR_IMAGES"], "run the tests with `make test`"))
        let rows = try String(contentsOfFile: sizes, encoding: .utf8).split(separator: "\n")
            .map { try JSONDecoder().decode(ThumborCompatibilityTests.Row.self, from: Data($0.utf8)) }
        var sources: [String: Data] = [:]
        let processor = ImageProcessor()
        var compared = 0, pixelCompared = 0
        var worst = (psnr: Double.infinity, url: "")
        for row in rows where row.status == 200 {
            let url = "/unsafe/" + row.path + "127.0.0.1:9/" + row.source
            let request = try ImageRequest.parse(path: url)
            let source =
                try sources[row.source] ?? Data(contentsOf: images.appendingPathComponent("sources/\(row.source)"))
            sources[row.source] = source
            let result: ProcessedImage
            do {
                result = try processor.process(source, request: request)
            } catch {
                XCTFail("\(url): \(error)")
                continue
            }
            XCTAssertEqual("\(result.width)x\(result.height)", "\(row.width ?? 0)x\(row.height ?? 0)", url)
            XCTAssertEqual(result.format.rawValue, row.format, url)
            compared += 1
            // thumbor without its detectors centres `smart/`; ImageKit's attention crop moves the
            // window to the detail on purpose: same size, other pixels.
            guard let file = row.file, !row.path.contains("smart/") else { continue }
            let theirs = try ImageCodersManager.shared.decode(
                Data(contentsOf: images.appendingPathComponent("thumbor/\(file)")))
            let ours = try ImageCodersManager.shared.decode(result.data)
            guard ours.width == theirs.width, ours.height == theirs.height else { continue }
            let psnr = Self.psnr(ours.frames[0].bitmap, theirs.frames[0].bitmap)
            XCTAssertGreaterThanOrEqual(psnr, 30, "\(url): \(psnr) dB")
            if psnr < worst.psnr { worst = (psnr, url) }
            pixelCompared += 1
        }
        XCTAssertGreaterThan(compared, 1000)
        XCTAssertGreaterThan(pixelCompared, 900)
        print(
            "thumbor pipeline: \(compared) answers compared, \(pixelCompared) by pixels; lowest PSNR \(worst.psnr) dB at \(worst.url)"
        )
    }

    /// PSNR over RGBA of two bitmaps of one size (transparent pixels count as they are).
    static func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
        var sum = 0.0
        for y in 0..<a.height {
            a.withRow(y) { left in
                b.withRow(y) { right in
                    for index in 0..<(a.width * 4) {
                        let difference = Double(left[index]) - Double(right[index])
                        sum += difference * difference
                    }
                }
            }
        }
        let mse = sum / Double(a.width * a.height * 4)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }
}
