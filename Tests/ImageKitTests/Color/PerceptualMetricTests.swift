import CImageCodecs
import Foundation
import XCTest

@testable import ImageKit

/// SSIMULACRA2 against PyPI's ssimulacra2 (0.3.0, in the reference venv `make test` prepares) on
/// the same pixels; DSSIM and both metrics' order by their definitions.
final class PerceptualMetricTests: XCTestCase {
    static let directory = TemporaryDirectory("imagekit-perceptual")

    override class func tearDown() { directory.remove() }

    /// A photo from the repository's corpus (Pillow's flower.jpg, 480 × 360), scaled to `width`
    /// pixels across.
    static func photo(width: Int = 360) throws -> Bitmap {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(
                "Corpus/conformance/jpeg/pillow/flower.jpg")
        let image = try ImageCodersManager.shared.decode(try Data(contentsOf: file), options: .init())
        let bitmap = image.frames[0].bitmap
        return try bitmap.resized(to: PixelSize(width: width, height: width * bitmap.height / bitmap.width))
    }

    /// `bitmap` through `format` at `quality`, decoded back.
    static func roundTrip(_ bitmap: Bitmap, _ format: ImageFormat, quality: Double) throws -> Bitmap {
        let coders = ImageCodersManager.shared
        let data = try coders.encode(
            DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png), as: format,
            options: ImageEncodingOptions(quality: quality))
        return try coders.decode(data, options: .init()).frames[0].bitmap
    }

    static func png(_ bitmap: Bitmap, _ name: String) throws -> String {
        let url = directory.url.appendingPathComponent(name)
        try ImageCodersManager.shared.encode(
            DecodedImage(frames: [ImageFrame(bitmap: bitmap)], format: .png), as: .png, options: .init()
        ).write(to: url)
        return url.path
    }

    func testSSIMULACRA2EqualsTheReferenceImplementationWithinHalfAPoint() throws {
        let wide = try Self.photo()
        let odd = try Self.photo(width: 203)  // odd sizes: partial blocks at every halving
        let tiny = try Self.photo(width: 37)  // three scales only
        var pairs: [(Bitmap, Bitmap, String)] = [
            (wide, try Self.roundTrip(wide, .jpeg, quality: 0.2), "jpeg q20"),
            (wide, try Self.roundTrip(wide, .jpeg, quality: 0.6), "jpeg q60"),
            (wide, try Self.roundTrip(wide, .jpeg, quality: 0.95), "jpeg q95"),
            (wide, try Self.roundTrip(wide, .webp, quality: 0.5), "webp q50"),
            (wide, try wide.blurred(sigma: 2), "blur"),
            (wide, wide, "identical"),
            (odd, try Self.roundTrip(odd, .jpeg, quality: 0.4), "odd jpeg q40"),
            (tiny, try Self.roundTrip(tiny, .jpeg, quality: 0.5), "tiny jpeg q50"),
        ]
        if ImageFormat.avif.isCodecSupported {
            pairs.append((wide, try Self.roundTrip(wide, .avif, quality: 0.5), "avif q50"))
        }
        var list: [[String]] = []
        for (index, (reference, distorted, _)) in pairs.enumerated() {
            list.append([try Self.png(reference, "\(index)-ref.png"), try Self.png(distorted, "\(index)-dist.png")])
        }
        let listFile = Self.directory.url.appendingPathComponent("pairs.json")
        try JSONSerialization.data(withJSONObject: list).write(to: listFile)
        let lines = try ReferencePython.lines(of: "ssimulacra2_reference.py", [listFile.path])
        XCTAssertEqual(lines.count, pairs.count)
        for (line, (reference, distorted, name)) in zip(lines, pairs) {
            let expected = try XCTUnwrap(Double(line))
            let score = try reference.ssimulacra2(of: distorted)
            XCTAssertEqual(score, expected, accuracy: 0.5, name)
            // The SSE2 loops (on a processor with AVX2, the test's other run) agree too.
            ik_set_avx2_allowed(0)
            let sse2 = try reference.ssimulacra2(of: distorted)
            ik_set_avx2_allowed(1)
            XCTAssertEqual(sse2, expected, accuracy: 0.5, "\(name), SSE2")
            print("ssimulacra2 \(name): ImageKit \(score) (SSE2 \(sse2)), PyPI \(expected)")
        }
    }

    func testScoresFollowQualityAndAReferenceIsReusable() throws {
        let photo = try Self.photo(width: 256)
        let ssimulacra2 = try PerceptualReference(photo, metric: .ssimulacra2)
        let dssim = try PerceptualReference(photo, metric: .dssim)
        XCTAssertEqual(try ssimulacra2.compare(photo), 100, accuracy: 1e-6)
        XCTAssertEqual(try dssim.compare(photo), 0, accuracy: 1e-6)
        var previous: (score: Double, dssim: Double) = (-.infinity, .infinity)
        for quality in [0.1, 0.3, 0.5, 0.7, 0.9] {
            let decoded = try Self.roundTrip(photo, .jpeg, quality: quality)
            let score = try ssimulacra2.compare(decoded), distance = try dssim.compare(decoded)
            XCTAssertGreaterThan(score, previous.score, "SSIMULACRA2 rises with quality (\(quality))")
            XCTAssertLessThan(distance, previous.dssim, "DSSIM falls with quality (\(quality))")
            XCTAssertEqual(score, try photo.ssimulacra2(of: decoded), accuracy: 1e-9, "a reference is reusable")
            previous = (score, distance)
        }
    }

    /// One reference compared from several threads at once: the first takes the reference's
    /// scratch, the others their own; every answer is the same.
    func testConcurrentComparisonsAgree() throws {
        let photo = try Self.photo(width: 200)
        let reference = try PerceptualReference(photo, metric: .ssimulacra2)
        let distorted = try Self.roundTrip(photo, .jpeg, quality: 0.5)
        let expected = try reference.compare(distorted)
        let scores = LockedList<Double>()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let score = try? reference.compare(distorted) { scores.append(score) }
        }
        XCTAssertEqual(scores.values, Array(repeating: expected, count: 8))
    }

    /// References of different sizes and metrics, made and freed in turn, reuse each other's
    /// memory (the pool in ik_quality.c): every score equals the one a first reference gave.
    func testReusedMemoryCarriesNothingOver() throws {
        var cases: [(Bitmap, Bitmap, PerceptualMetric)] = []
        for (width, quality) in [(300, 0.4), (96, 0.7), (200, 0.2), (300, 0.9)] {
            let photo = try Self.photo(width: width)
            for metric in PerceptualMetric.allCases {
                cases.append((photo, try Self.roundTrip(photo, .jpeg, quality: quality), metric))
            }
        }
        let first = try cases.map { try PerceptualReference($0.0, metric: $0.2).compare($0.1) }
        for _ in 0..<2 {
            for (index, (photo, distorted, metric)) in cases.enumerated().reversed() {
                XCTAssertEqual(try PerceptualReference(photo, metric: metric).compare(distorted), first[index])
            }
        }
    }

    /// A flat image has no detail; a photo has more than its blurred copy, and the measure does
    /// not depend on the metric's colour space alone (DSSIM's L* orders them too).
    func testDetailOrdersFlatSmoothAndBusyImages() throws {
        let photo = try Self.photo(width: 240)
        var buffer = try PixelBuffer(width: 240, height: 180)
        for y in 0..<180 {
            let row = buffer.row(y)
            for x in 0..<240 { (row + x * 4).update(from: [120, 130, 140, 255], count: 4) }
        }
        let flat = buffer.freeze(isOpaque: true)
        let smooth = try photo.resized(to: PixelSize(width: 60, height: 45)).resized(
            to: PixelSize(width: 240, height: 180))
        for metric in PerceptualMetric.allCases {
            let details = try [flat, smooth, photo].map { try PerceptualReference($0, metric: metric).detail }
            XCTAssertEqual(details[0], 0, accuracy: 1e-9, "\(metric): flat")
            XCTAssertLessThan(details[1], details[2], "\(metric): a blurred copy has less detail")
            XCTAssertGreaterThan(details[1], 0, "\(metric)")
        }
    }

    func testSizesAreChecked() throws {
        let photo = try Self.photo(width: 64)
        let reference = try PerceptualReference(photo, metric: .ssimulacra2)
        XCTAssertThrowsError(try reference.compare(try Self.photo(width: 65))) { error in
            XCTAssertEqual((error as? ImageError)?.code, .invalidArgument)
        }
        XCTAssertThrowsError(try PerceptualReference(try Self.photo(width: 7), metric: .dssim)) { error in
            XCTAssertEqual((error as? ImageError)?.code, .invalidArgument)
        }
    }

    /// Transparent pixels are seen over mid grey: a transparent copy of an image is far from it,
    /// and alpha that only hides grey costs nothing.
    func testAlphaIsSeenOverGrey() throws {
        let photo = try Self.photo(width: 64)
        let transparent = try PixelBuffer(width: photo.width, height: photo.height)
        let grey = try PixelBuffer(width: photo.width, height: photo.height)
        for y in 0..<photo.height {
            for x in 0..<photo.width {
                let p = photo[x, y]
                let t = transparent.row(y) + x * 4, g = grey.row(y) + x * 4
                (t[0], t[1], t[2], t[3]) = (p.r, p.g, p.b, 0)
                (g[0], g[1], g[2], g[3]) = (128, 128, 128, 255)
            }
        }
        let clear = transparent.freeze(isOpaque: false), flat = grey.freeze(isOpaque: true)
        XCTAssertLessThan(try photo.ssimulacra2(of: clear), 50)
        XCTAssertEqual(try flat.ssimulacra2(of: clear), 100, accuracy: 0.01)
    }
}
