import CImageCodecs
import Foundation
import XCTest

@testable import ImageKit

/// The transformers as pure functions on bitmaps: exact geometry pixel for pixel, filters
/// against straightforward reference implementations, keys as SDWebImage renders them.
final class TransformerTests: XCTestCase {
    private var avx2Label = "allowed"
    /// A bitmap whose pixel (x, y) is (x, y, x + 7y, 255): every pixel distinct (sides up to
    /// 256), so a geometric transform can be checked exactly.
    func numbered(width: Int, height: Int) -> Bitmap {
        let buffer = try! PixelBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let p = buffer.row(y) + x * 4
                p[0] = UInt8(x); p[1] = UInt8(y); p[2] = UInt8(truncatingIfNeeded: x &+ y &* 7); p[3] = 255
            }
        }
        return buffer.freeze(isOpaque: true)
    }

    func assertPixels(
        _ bitmap: Bitmap, equal expected: (Int, Int) -> (Int, Int), source: Bitmap,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let (sx, sy) = expected(x, y)
                let a = bitmap[x, y], b = source[sx, sy]
                guard a == b else {
                    XCTFail("pixel (\(x), \(y)) is \(a), expected source (\(sx), \(sy)) \(b)", file: file, line: line)
                    return
                }
            }
        }
    }

    // MARK: Exact geometry

    func testFlipsArePixelExact() throws {
        let source = numbered(width: 5, height: 3)
        let horizontal = try source.flipped(horizontally: true, vertically: false)
        assertPixels(horizontal, equal: { x, y in (4 - x, y) }, source: source)
        let vertical = try source.flipped(horizontally: false, vertically: true)
        assertPixels(vertical, equal: { x, y in (x, 2 - y) }, source: source)
        let both = try source.flipped(horizontally: true, vertically: true)
        assertPixels(both, equal: { x, y in (4 - x, 2 - y) }, source: source)
        XCTAssertTrue(horizontal.isOpaque && vertical.isOpaque && both.isOpaque)
    }

    func testQuarterTurnsArePixelExactAndCounterClockwise() throws {
        // Wider than a 32-pixel tile so the tiled kernel's edges are covered too.
        let source = numbered(width: 37, height: 45)
        let left = try source.rotated(quarterTurns: 1)
        XCTAssertEqual(PixelSize(width: left.width, height: left.height), PixelSize(width: 45, height: 37))
        // Counter-clockwise: the source's top-right corner becomes the top-left.
        assertPixels(left, equal: { x, y in (36 - y, x) }, source: source)
        let half = try source.rotated(quarterTurns: 2)
        assertPixels(half, equal: { x, y in (36 - x, 44 - y) }, source: source)
        let right = try source.rotated(quarterTurns: 3)
        assertPixels(right, equal: { x, y in (y, 44 - x) }, source: source)
        XCTAssertTrue(try source.rotated(quarterTurns: 4) === source)
        // The rotation transformer takes the exact path for multiples of 90°.
        let viaTransformer = try XCTUnwrap(ImageRotationTransformer(degrees: 90).transform(TestImages.still(source)))
        XCTAssertEqual(viaTransformer.bitmap.packedRGBA(), left.packedRGBA())
        XCTAssertTrue(viaTransformer.isOpaque)
    }

    func testOrientationsStillMatchTheirDefinition() throws {
        // Sizes around the 4 × 4 blocks and 32 × 32 tiles of the transposing kernel.
        for (width, height) in [(6, 4), (1, 1), (3, 9), (37, 45), (64, 33)] {
            let source = numbered(width: width, height: height)
            let w = width - 1, h = height - 1
            // EXIF: .right is stored turned 90° counter-clockwise, so showing it turns clockwise.
            assertPixels(try source.applying(.right), equal: { x, y in (y, h - x) }, source: source)
            assertPixels(try source.applying(.left), equal: { x, y in (w - y, x) }, source: source)
            assertPixels(try source.applying(.leftMirrored), equal: { x, y in (y, x) }, source: source)
            assertPixels(try source.applying(.rightMirrored), equal: { x, y in (w - y, h - x) }, source: source)
            assertPixels(try source.applying(.downMirrored), equal: { x, y in (x, h - y) }, source: source)
            assertPixels(try source.applying(.upMirrored), equal: { x, y in (w - x, y) }, source: source)
            assertPixels(try source.applying(.down), equal: { x, y in (w - x, h - y) }, source: source)
        }
    }

    func testCropIsExactAndClamped() throws {
        let source = numbered(width: 10, height: 8)
        let crop = try source.cropped(to: PixelRect(x: 2, y: 3, width: 4, height: 2))
        XCTAssertEqual(crop.width, 4)
        XCTAssertEqual(crop.height, 2)
        assertPixels(crop, equal: { x, y in (x + 2, y + 3) }, source: source)
        let clamped = try source.cropped(to: PixelRect(x: 7, y: -5, width: 100, height: 7))
        XCTAssertEqual(PixelSize(width: clamped.width, height: clamped.height), PixelSize(width: 3, height: 2))
        assertPixels(clamped, equal: { x, y in (x + 7, y) }, source: source)
        XCTAssertThrowsError(try source.cropped(to: PixelRect(x: 10, y: 0, width: 5, height: 5))) { error in
            XCTAssertEqual((error as? ImageError)?.code, .invalidArgument)
        }
        XCTAssertThrowsError(
            try source.cropped(to: PixelRect(x: Int.max - 1, y: Int.max - 1, width: Int.max, height: Int.max)))
    }

    // MARK: Resampling filters against references

    func testResizeModesGiveTheirSizes() throws {
        let source = TestImages.gradient(width: 300, height: 200)
        let fit = try source.resized(to: PixelSize(100), mode: .fit)
        XCTAssertEqual(PixelSize(width: fit.width, height: fit.height), PixelSize(width: 100, height: 67))
        let fill = try source.resized(to: PixelSize(100), mode: .fill)
        XCTAssertEqual(PixelSize(width: fill.width, height: fill.height), PixelSize(width: 100, height: 100))
        let exact = try source.resized(to: PixelSize(width: 90, height: 10), mode: .exact)
        XCTAssertEqual(PixelSize(width: exact.width, height: exact.height), PixelSize(width: 90, height: 10))
        let up = try source.resized(to: PixelSize(600), mode: .fit)
        XCTAssertEqual(PixelSize(width: up.width, height: up.height), PixelSize(width: 600, height: 400))
        XCTAssertThrowsError(try source.resized(to: PixelSize(width: 0, height: 5), mode: .fit))
    }

    func testResizeMatchesAnExactLanczosReference() throws {
        for (source, target) in [
            (TestImages.gradient(width: 640, height: 480, seed: 3), PixelSize(width: 160, height: 120)),
            (TestImages.gradient(width: 300, height: 200), PixelSize(width: 200, height: 133)),
            (TestImages.gradient(width: 64, height: 48), PixelSize(width: 150, height: 113)),
        ] {
            let ours = try source.resized(to: target, mode: .exact)
            let reference = ReferenceFilters.lanczos(source, to: target)
            XCTAssertGreaterThanOrEqual(psnr(ours, reference), 35, "\(source.width)x\(source.height) → \(target)")
        }
        // Fill is the centred crop with the target's aspect ratio, resized.
        let source = TestImages.gradient(width: 400, height: 200, seed: 9)
        let fill = try source.resized(to: PixelSize(100), mode: .fill)
        let reference = ReferenceFilters.lanczos(
            try source.cropped(to: PixelRect(x: 100, y: 0, width: 200, height: 200)), to: PixelSize(100))
        XCTAssertGreaterThanOrEqual(psnr(fill, reference), 35)
    }

    /// The resampler's weight tables come from a small cache: a cached table is the one computed
    /// afresh (every tap of every pixel), the cache keeps at most its limit, and a resize gives the
    /// same pixels the first time (table made) and the next (table found). Pairs differ in one
    /// part of the key only.
    func testResamplingWeightsFromTheCacheAreTheComputedOnes() throws {
        for (inSize, outSize, available) in [
            (400.0, 256, 400), (399.5, 256, 400), (656.25, 171, 657), (656.25, 171, 600), (100.0, 300, 100),
            (7.5, 3, 8),
        ] {
            let computed = FixedPointResample.Weights(
                Resampler.Coefficients(inSize: inSize, outSize: outSize, available: available))
            for _ in 0..<2 {
                let cached = FixedPointResample.Weights.cached(inSize: inSize, outSize: outSize, available: available)
                XCTAssertTrue(cached.starts == computed.starts, "starts: \(inSize) → \(outSize) from \(available)")
                XCTAssertTrue(cached.counts == computed.counts, "counts: \(inSize) → \(outSize) from \(available)")
                XCTAssertTrue(cached.weights == computed.weights, "weights: \(inSize) → \(outSize) from \(available)")
                XCTAssertEqual(cached.stride, computed.stride)
            }
        }
        for outSize in 1...(FixedPointResample.Weights.cacheLimit * 2) {
            _ = FixedPointResample.Weights.cached(inSize: 999, outSize: outSize, available: 999)
        }
        XCTAssertLessThanOrEqual(FixedPointResample.Weights.cachedCount, FixedPointResample.Weights.cacheLimit)
        let source = TestImages.gradient(width: 517, height: 389, seed: 5)
        let first = try source.resized(to: PixelSize(width: 211, height: 97), mode: .exact)
        let second = try source.resized(to: PixelSize(width: 211, height: 97), mode: .exact)
        XCTAssertEqual(first.packedRGBA(), second.packedRGBA())
    }

    func testResizeFiltersInPremultipliedAlpha() throws {
        // Transparent pixels are red, opaque ones blue: a straight-alpha filter would bleed red.
        let buffer = try PixelBuffer(width: 64, height: 64)
        for y in 0..<64 {
            for x in 0..<64 {
                let p = buffer.row(y) + x * 4
                let opaque = x >= 32
                p[0] = opaque ? 0 : 255; p[1] = 0; p[2] = opaque ? 255 : 0; p[3] = opaque ? 255 : 0
            }
        }
        let resized = try buffer.freeze(isOpaque: false).resized(to: PixelSize(16), mode: .exact)
        for x in 0..<16 {
            let pixel = resized[x, 8]
            if pixel.a > 0 { XCTAssertLessThanOrEqual(pixel.r, 1, "colour of transparent pixels bled into x = \(x)") }
        }
    }

    func testBlurMatchesAGaussianReference() throws {
        for sigma in [1.0, 2.5, 4.0] {
            let source = TestImages.gradient(width: 120, height: 90, seed: 5)
            let ours = try source.blurred(sigma: sigma)
            let reference = ReferenceFilters.gaussian(source, sigma: sigma)
            XCTAssertGreaterThanOrEqual(psnr(ours, reference), 35, "sigma \(sigma)")
            XCTAssertTrue(ours.isOpaque)
        }
        // A flat image stays flat, edges included (edge pixels repeat).
        let flat = try TestImages.blocks(width: 40, height: 30, colors: 1).blurred(sigma: 3)
        XCTAssertEqual(
            Set(flat.packedRGBA()).count, Set(TestImages.blocks(width: 40, height: 30, colors: 1).packedRGBA()).count)
        // Translucent images blur in premultiplied alpha: no colour from clear pixels.
        let translucent = try TestImages.blocks(width: 64, height: 64, transparentCorner: true).blurred(sigma: 2)
        XCTAssertFalse(translucent.isOpaque)
        let reference = ReferenceFilters.gaussian(
            TestImages.blocks(width: 64, height: 64, transparentCorner: true), sigma: 2)
        // Compared premultiplied: a straight colour under alpha 3 is noise in any 8-bit blur.
        XCTAssertGreaterThanOrEqual(
            psnr(
                ReferenceFilters.premultiplied(translucent), ReferenceFilters.premultiplied(reference),
                includeAlpha: true), 35)
        let unchanged = TestImages.gradient(width: 8, height: 8)
        XCTAssertTrue(try unchanged.blurred(sigma: 0) === unchanged, "sigma 0 is the identity")
        XCTAssertThrowsError(try flat.blurred(sigma: -1))
    }

    /// The vector paths work in tiles of 4 pixels × 16 rows and strips of 16 pixels, with AVX2 or
    /// SSE2 box passes: every size (tiny ones and those that are not multiples of the tiles) and
    /// every radius must give exactly what the plain cascade of box passes gives.
    func testBlurEqualsThePlainBoxCascadeAtEverySize() throws {
        try withAndWithoutAVX2 { try checkBlurAgainstTheBoxCascade() }
    }

    private func checkBlurAgainstTheBoxCascade() throws {
        let sizes = [(1, 1), (3, 2), (5, 17), (33, 19), (130, 7), (7, 130), (18, 33), (64, 16)]
        for (width, height) in sizes {
            for sigma in [1.5, 4.0, 100.0] {
                for translucent in [false, true] {
                    let source = TestImages.gradient(
                        width: width, height: height, alpha: translucent, seed: width + height)
                    let ours = try source.blurred(sigma: sigma)
                    let radii = BoxBlur.radii(sigma: min(sigma, Bitmap.maximumBlurSigma))
                    let expected = ReferenceFilters.boxCascade(source, radii: radii)
                    let differing = zip(ours.packedRGBA(), expected).filter { $0 != $1 }.count
                    XCTAssertEqual(
                        differing, 0,
                        "\(width)×\(height), sigma \(sigma), translucent \(translucent), AVX2 \(avx2Label): bytes that differ"
                    )
                }
            }
        }
        for (width, height) in [(1, 1), (1, 5), (6, 1), (3, 2)] {
            let flat = TestImages.blocks(width: width, height: height, colors: 1)
            XCTAssertTrue(
                try flat.blurred(sigma: 100).packedRGBA() == flat.packedRGBA(),
                "a flat \(width)×\(height) image stays as it is")
        }
    }

    /// In-memory resizes take the fixed-point path (C, 14-bit weights, 8-bit intermediate); the
    /// streaming float Resampler is the reference: box factors 1, 2 (the fused 2 × 2 path, odd
    /// and even widths), 3 and 7, up- and downscales, opaque and translucent.
    func testFixedPointResizeAgreesWithTheFloatResampler() throws {
        try withAndWithoutAVX2 { try checkFixedPointResize() }
    }

    /// Runs `body` with the AVX2 loops allowed (where the processor has them), then forbidden.
    private func withAndWithoutAVX2(_ body: () throws -> Void) rethrows {
        defer { ik_set_avx2_allowed(1); avx2Label = "allowed" }
        avx2Label = "allowed"
        try body()
        ik_set_avx2_allowed(0)
        avx2Label = "forbidden"
        try body()
    }

    private func checkFixedPointResize() throws {
        let cases: [(PixelSize, PixelSize)] = [
            (PixelSize(width: 403, height: 302), PixelSize(width: 100, height: 75)),
            (PixelSize(width: 402, height: 301), PixelSize(width: 131, height: 97)),
            (PixelSize(width: 401, height: 300), PixelSize(width: 64, height: 48)),
            (PixelSize(width: 97, height: 61), PixelSize(width: 90, height: 57)),
            (PixelSize(width: 50, height: 30), PixelSize(width: 123, height: 77)),
            (PixelSize(width: 700, height: 20), PixelSize(width: 33, height: 3)),
            (PixelSize(width: 3, height: 200), PixelSize(width: 1, height: 10)),
        ]
        for (source, target) in cases {
            for translucent in [false, true] {
                let bitmap = TestImages.gradient(
                    width: source.width, height: source.height, alpha: translucent, seed: 7)
                let fixed = try bitmap.resized(to: target, mode: .exact)
                let streaming = try Resampler(
                    source: source, target: target, isOpaque: bitmap.isOpaque,
                    reducingGap: Bitmap.resizeReducingGap)
                for y in 0..<bitmap.height { bitmap.withRow(y) { streaming.push(row: $0.baseAddress!) } }
                let reference = streaming.finish()
                XCTAssertEqual(fixed.width, target.width)
                XCTAssertEqual(fixed.isOpaque, !translucent)
                XCTAssertGreaterThanOrEqual(
                    psnr(
                        ReferenceFilters.premultiplied(fixed), ReferenceFilters.premultiplied(reference),
                        includeAlpha: true), 45,
                    "\(source) → \(target), translucent \(translucent), AVX2 \(avx2Label)")
            }
        }
        // Flat stays flat through every stage (weights sum to exactly 1).
        let flat = TestImages.blocks(width: 301, height: 203, colors: 1)
        let flatColours = Set(flat.packedRGBA())
        XCTAssertEqual(
            Set(try flat.resized(to: PixelSize(width: 77, height: 51), mode: .exact).packedRGBA()), flatColours)
        XCTAssertEqual(
            Set(try flat.resized(to: PixelSize(width: 150, height: 101), mode: .exact).packedRGBA()), flatColours)
    }

    func testFreeRotationSizeCentreAndEdges() throws {
        let source = TestImages.blocks(width: 101, height: 51, colors: 1)
        let turned = try source.rotated(byRadians: 30 * .pi / 180, fitSize: true)
        // Pillow's rotate(30, expand=True) size for 101×51.
        XCTAssertEqual(PixelSize(width: turned.width, height: turned.height), PixelSize(width: 113, height: 95))
        XCTAssertFalse(turned.isOpaque)
        XCTAssertEqual(turned[0, 0].a, 0, "a corner outside the turned image is clear")
        let centre = turned[turned.width / 2, turned.height / 2]
        XCTAssertEqual(centre.a, 255)
        XCTAssertEqual(centre.r, source[50, 25].r)
        // Somewhere along the turned edge alpha is partial: the edge is anti-aliased.
        var partial = 0
        for x in 0..<turned.width { let a = turned[x, turned.height / 2].a; if a > 0 && a < 255 { partial += 1 } }
        XCTAssertGreaterThan(partial, 0)
        // Without fitSize the canvas keeps its size.
        let kept = try source.rotated(byRadians: 0.3, fitSize: false)
        XCTAssertEqual(PixelSize(width: kept.width, height: kept.height), PixelSize(width: 101, height: 51))
        XCTAssertThrowsError(try source.rotated(byRadians: .nan, fitSize: true))
    }

    func testFreeRotationMatchesBilinearReference() throws {
        let source = TestImages.gradient(width: 80, height: 60, seed: 2)
        let angle = 17 * Double.pi / 180
        let ours = try source.rotated(byRadians: angle, fitSize: true)
        let reference = ReferenceFilters.rotate(
            source, radians: angle, size: PixelSize(width: ours.width, height: ours.height))
        XCTAssertGreaterThanOrEqual(psnr(ours, reference, includeAlpha: true), 35)
    }

    // MARK: Round corners, tint, grayscale

    func testRoundCornersAlphaAtCornersAndCentre() throws {
        let source = TestImages.blocks(width: 100, height: 80, colors: 1)
        let rounded = try source.roundingCorners(radius: 20)
        XCTAssertFalse(rounded.isOpaque)
        for (x, y) in [(0, 0), (99, 0), (0, 79), (99, 79)] { XCTAssertEqual(rounded[x, y].a, 0, "corner (\(x), \(y))") }
        XCTAssertEqual(rounded[50, 40].a, 255)
        XCTAssertEqual(rounded[50, 0].a, 255, "straight edges stay opaque")
        XCTAssertEqual(rounded[20, 20].a, 255, "inside the arc")
        // Pixels the arc crosses get partial coverage: the edge is anti-aliased.
        XCTAssertEqual(rounded[10, 2].a, 150, "coverage 0.59 at distance 19.91 from the arc's centre")
        var partial = 0
        for y in 0..<20 { for x in 0..<20 where rounded[x, y].a > 0 && rounded[x, y].a < 255 { partial += 1 } }
        XCTAssertGreaterThan(partial, 20)
        // Only the chosen corners.
        let one = try source.roundingCorners(radius: 20, corners: .topLeft)
        XCTAssertEqual(one[0, 0].a, 0)
        XCTAssertEqual(one[99, 0].a, 255)
        // A border paints the margin in its colour, inside the outline.
        let red = RGBAColor(red: 255, green: 0, blue: 0)
        let bordered = try source.roundingCorners(radius: 10, borderWidth: 3, borderColor: red)
        XCTAssertEqual(bordered[50, 1].r, 255)
        XCTAssertEqual(bordered[50, 1].a, 255)
        XCTAssertEqual(bordered[50, 40].r, source[50, 40].r)
        // Square corners with an opaque border keep an opaque image opaque.
        XCTAssertTrue(try source.roundingCorners(radius: 0, borderWidth: 2, borderColor: red).isOpaque)
        XCTAssertThrowsError(try source.roundingCorners(radius: -1))
    }

    func testTintIsSourceAtopAndGrayscaleIsRec601() throws {
        let source = TestImages.blocks(width: 16, height: 16, transparentCorner: true)
        let tinted = try source.tinted(with: RGBAColor(red: 0, green: 0, blue: 255))
        XCTAssertEqual(tinted[10, 10].r, 0)
        XCTAssertEqual(tinted[10, 10].b, 255)
        XCTAssertEqual(tinted[0, 0].a, 0, "transparent pixels stay transparent")
        let half = try source.tinted(with: RGBAColor(red: 255, green: 255, blue: 255, alpha: 128))
        let original = source[10, 10]
        XCTAssertEqual(Double(half[10, 10].r), (Double(original.r) + 255) / 2, accuracy: 1.5)
        let gray = try source.grayscaled()
        for (x, y) in [(5, 5), (10, 12), (15, 3)] {
            let p = source[x, y], g = gray[x, y]
            let luma = (19595 * Int(p.r) + 38470 * Int(p.g) + 7471 * Int(p.b) + 32768) >> 16
            XCTAssertEqual(Int(g.r), luma)
            XCTAssertEqual(g.r, g.g)
            XCTAssertEqual(g.g, g.b)
            XCTAssertEqual(g.a, p.a)
        }
        XCTAssertFalse(gray.isOpaque)
        // Every pixel, widths that leave 0–3 pixels after the four-pixel steps.
        for width in [1, 6, 7, 33] {
            let source = TestImages.gradient(width: width, height: 5, alpha: true, seed: width)
            let gray = try source.grayscaled()
            for y in 0..<5 {
                for x in 0..<width {
                    let p = source[x, y], g = gray[x, y]
                    let weighted: Int = 19595 * Int(p.r) + 38470 * Int(p.g) + 7471 * Int(p.b)
                    let luma = UInt8((weighted + 32768) >> 16)
                    let expected: (UInt8, UInt8, UInt8, UInt8) = (luma, luma, luma, p.a)
                    XCTAssertTrue(g == expected, "(\(x), \(y)) of \(width)")
                }
            }
        }
        // 16 MiB and more go out with streaming stores: same pixels.
        let large = TestImages.gradient(width: 2101, height: 2000, alpha: true, seed: 3)
        let largeGray = try large.grayscaled()
        for (x, y) in [(0, 0), (2100, 1999), (1050, 999), (3, 1777), (2097, 5)] {
            let p = large[x, y], g = largeGray[x, y]
            let weighted: Int = 19595 * Int(p.r) + 38470 * Int(p.g) + 7471 * Int(p.b)
            let luma = UInt8((weighted + 32768) >> 16)
            let expected: (UInt8, UInt8, UInt8, UInt8) = (luma, luma, luma, p.a)
            XCTAssertTrue(g == expected, "(\(x), \(y)) of the large image")
        }
        XCTAssertEqual(RGBAColor(hex: "#FF8000"), RGBAColor(red: 255, green: 128, blue: 0, alpha: 255))
        XCTAssertEqual(RGBAColor(hex: "11223344")?.hexString, "#11223344")
        XCTAssertNil(RGBAColor(hex: "#12345"))
    }

    // MARK: Images, frames and keys

    func testEveryFrameIsTransformedAndTimingKept() throws {
        let frames = (0..<3).map {
            ImageFrame(
                bitmap: TestImages.gradient(width: 40, height: 30, seed: $0 * 20), duration: 0.1 * Double($0 + 1))
        }
        let animation = DecodedImage(frames: frames, loopCount: 2, format: .gif)
        let pipeline = ImagePipelineTransformer([
            ImageResizingTransformer(size: PixelSize(20), mode: .fill),
            ImageFlippingTransformer(horizontal: true, vertical: false),
            ImageRoundCornerTransformer(radius: 4),
            ImageBlurTransformer(sigma: 1), ImageTintTransformer(color: RGBAColor(hex: "#00ff0020")!),
            ImageGrayscaleTransformer(), ImageRotationTransformer(degrees: 10),
            ImageCroppingTransformer(rect: PixelRect(x: 2, y: 2, width: 10, height: 10)),
        ])
        let result = try XCTUnwrap(pipeline.transform(animation))
        XCTAssertEqual(result.frames.count, 3)
        XCTAssertEqual(result.frames.map(\.duration), [0.1, 0.2, 0.30000000000000004])
        XCTAssertEqual(result.loopCount, 2)
        XCTAssertEqual(result.format, .gif)
        for frame in result.frames {
            XCTAssertEqual(PixelSize(width: frame.bitmap.width, height: frame.bitmap.height), PixelSize(10))
        }
        XCTAssertNotEqual(result.frames[0].bitmap.packedRGBA(), result.frames[2].bitmap.packedRGBA())
    }

    func testTransformersWorkOnUprightPixels() throws {
        var image = TestImages.still(numbered(width: 6, height: 4))
        image.orientation = .right
        image.isOrientationApplied = false
        let cropped = try XCTUnwrap(
            ImageCroppingTransformer(rect: PixelRect(x: 0, y: 0, width: 4, height: 1)).transform(image))
        XCTAssertTrue(cropped.isOrientationApplied)
        XCTAssertEqual(cropped.width, 4)
        XCTAssertEqual(cropped.bitmap[0, 0].r, image.bitmap.applyingForTest(.right)[0, 0].r)
    }

    func testKeysAreSDWebImagesStrings() {
        let pipeline = ImagePipelineTransformer([
            ImageFlippingTransformer(horizontal: true, vertical: false),
            ImageRotationTransformer(angle: .pi / 4, fitSize: true),
        ])
        XCTAssertEqual(
            pipeline.transformerKey, "SDImageFlippingTransformer(1,0)-SDImageRotationTransformer(0.78539816339,1)")
        XCTAssertEqual(
            CacheKey("image.png").transformed(by: pipeline.transformerKey).rendered,
            "image-SDImageFlippingTransformer(1,0)-SDImageRotationTransformer(0.78539816339,1).png")
        XCTAssertEqual(
            ImageResizingTransformer(size: PixelSize(width: 256, height: 128), mode: .fill).transformerKey,
            "SDImageResizingTransformer({256.000000,128.000000},2)")
        XCTAssertEqual(
            ImageCroppingTransformer(rect: PixelRect(x: 1, y: 2, width: 3, height: 4)).transformerKey,
            "SDImageCroppingTransformer({1.000000,2.000000,3.000000,4.000000})")
        XCTAssertEqual(
            ImageRoundCornerTransformer(radius: 8, borderWidth: 2, borderColor: RGBAColor(hex: "#ff0000ff"))
                .transformerKey,
            "SDImageRoundCornerTransformer(8.000000,18446744073709551615,2.000000,#ff0000ff)")
        XCTAssertEqual(
            ImageRoundCornerTransformer(radius: 8, corners: [.topLeft, .bottomRight]).transformerKey,
            "SDImageRoundCornerTransformer(8.000000,9,0.000000,(null))")
        XCTAssertEqual(ImageBlurTransformer(sigma: 4).transformerKey, "SDImageBlurTransformer(4.000000)")
        XCTAssertEqual(
            ImageTintTransformer(color: RGBAColor(red: 0, green: 0, blue: 255, alpha: 128)).transformerKey,
            "SDImageTintTransformer(#0000ff80)")
        XCTAssertEqual(
            ImageRotationTransformer(degrees: 90, fitSize: false).transformerKey,
            "SDImageRotationTransformer(1.57079632679,0)")
    }

    func testKeysAreDistinctForDistinctParametersAndStable() {
        let transformers: [any ImageTransforming] = [
            ImageResizingTransformer(size: PixelSize(256), mode: .fit),
            ImageResizingTransformer(size: PixelSize(256), mode: .fill),
            ImageResizingTransformer(size: PixelSize(width: 256, height: 255), mode: .fit),
            ImageCroppingTransformer(rect: PixelRect(x: 0, y: 0, width: 10, height: 10)),
            ImageCroppingTransformer(rect: PixelRect(x: 1, y: 0, width: 10, height: 10)),
            ImageFlippingTransformer(horizontal: true, vertical: false),
            ImageFlippingTransformer(horizontal: false, vertical: true),
            ImageRotationTransformer(degrees: 30, fitSize: true), ImageRotationTransformer(degrees: 30, fitSize: false),
            ImageRotationTransformer(degrees: 30.5, fitSize: true),
            ImageRoundCornerTransformer(radius: 8), ImageRoundCornerTransformer(radius: 9),
            ImageRoundCornerTransformer(radius: 8, corners: .topLeft),
            ImageRoundCornerTransformer(radius: 8, borderWidth: 1, borderColor: .black),
            ImageRoundCornerTransformer(radius: 8, borderWidth: 1, borderColor: .white),
            ImageBlurTransformer(sigma: 2), ImageBlurTransformer(sigma: 2.5),
            ImageTintTransformer(color: .black), ImageTintTransformer(color: .white), ImageGrayscaleTransformer(),
        ]
        let keys = transformers.map(\.transformerKey)
        XCTAssertEqual(Set(keys).count, keys.count, "\(keys)")
        XCTAssertEqual(ImageBlurTransformer(sigma: 2).transformerKey, ImageBlurTransformer(sigma: 2).transformerKey)
        XCTAssertEqual(
            ImagePipelineTransformer(Array(transformers[0..<3])).transformerKey, keys[0..<3].joined(separator: "-"))
    }
}

extension Bitmap {
    func applyingForTest(_ orientation: ImageOrientation) -> Bitmap { try! applying(orientation) }
}

/// Straightforward, slow reference filters in Double: what the fast paths must agree with.
enum ReferenceFilters {
    /// ImageKit's blur written plainly: premultiply (unless opaque), box passes of the given radii
    /// along rows (edges repeated, `(sum + r) × ⌈2¹⁶/(2r+1)⌉ >> 16` in 16 bits), bytes saturated,
    /// the same along columns, then straight alpha through 16.16 reciprocals.
    static func boxCascade(_ source: Bitmap, radii: [Int]) -> [UInt8] {
        let width = source.width, height = source.height
        var values = [Int](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let p = source[x, y]
                let a = Int(p.a)
                for (c, v) in [Int(p.r), Int(p.g), Int(p.b)].enumerated() {
                    let product = v * a + 128
                    values[(y * width + x) * 4 + c] = source.isOpaque ? v : (product + (product >> 8)) >> 8
                }
                values[(y * width + x) * 4 + 3] = a
            }
        }
        func passes(_ line: [Int]) -> [Int] {
            var line = line
            for radius in radii where radius > 0 {
                let box = 2 * radius + 1, multiplier = (65536 + box - 1) / box
                line = line.indices.map { position in
                    var sum = 0
                    for k in -radius...radius { sum += line[min(max(position + k, 0), line.count - 1)] }
                    return (((sum + box / 2) & 0xFFFF) * multiplier) >> 16
                }
            }
            return line.map { min($0, 255) }
        }
        for y in 0..<height {
            for c in 0..<4 {
                let line = passes((0..<width).map { values[(y * width + $0) * 4 + c] })
                for x in 0..<width { values[(y * width + x) * 4 + c] = line[x] }
            }
        }
        for x in 0..<width {
            for c in 0..<4 {
                let line = passes((0..<height).map { values[($0 * width + x) * 4 + c] })
                for y in 0..<height { values[(y * width + x) * 4 + c] = line[y] }
            }
        }
        if !source.isOpaque {
            for index in stride(from: 0, to: values.count, by: 4) {
                let a = values[index + 3]
                if a == 255 { continue }
                for c in 0..<3 {
                    if a == 0 { values[index + c] = 0; continue }
                    let reciprocal = (255 * 65536 + a / 2) / a
                    values[index + c] = min((values[index + c] * reciprocal + 32768) >> 16, 255)
                }
            }
        }
        return values.map { UInt8($0) }
    }

    static func premultipliedPixel(_ bitmap: Bitmap, _ x: Int, _ y: Int) -> [Double] {
        let p = bitmap[x, y]
        let a = Double(p.a) / 255
        return [Double(p.r) * a, Double(p.g) * a, Double(p.b) * a, Double(p.a)]
    }

    /// The same pixels with colour multiplied by alpha (flagged opaque so nothing reinterprets them).
    static func premultiplied(_ source: Bitmap) -> Bitmap {
        let buffer = try! PixelBuffer(width: source.width, height: source.height)
        for y in 0..<source.height {
            for x in 0..<source.width {
                let v = premultipliedPixel(source, x, y)
                let p = buffer.row(y) + x * 4
                for c in 0..<4 { p[c] = UInt8(v[c].rounded()) }
            }
        }
        return buffer.freeze(isOpaque: true)
    }

    static func bitmap(width: Int, height: Int, _ pixel: (Int, Int) -> [Double]) -> Bitmap {
        let buffer = try! PixelBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let v = pixel(x, y)
                let alpha = min(max(v[3], 0), 255)
                let p = buffer.row(y) + x * 4
                for c in 0..<3 { p[c] = alpha < 0.5 ? 0 : UInt8(min(max(v[c] * 255 / alpha, 0), 255).rounded()) }
                p[3] = UInt8(alpha.rounded())
            }
        }
        return buffer.freeze(isOpaque: false)
    }

    static func lanczosWeights(inSize: Int, outSize: Int) -> [[(Int, Double)]] {
        let scale = Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1)
        let support = 3 * filterScale
        func sinc(_ x: Double) -> Double { x == 0 ? 1 : sin(.pi * x) / (.pi * x) }
        return (0..<outSize).map { index in
            let center = (Double(index) + 0.5) * scale
            let low = max(Int(center - support + 0.5), 0), high = min(Int(center + support + 0.5), inSize)
            var taps = (low..<high).map { i -> (Int, Double) in
                let x = (Double(i) - center + 0.5) / filterScale
                return (i, abs(x) < 3 ? sinc(x) * sinc(x / 3) : 0)
            }
            let total = taps.reduce(0) { $0 + $1.1 }
            taps = taps.map { ($0.0, $0.1 / total) }
            return taps
        }
    }

    /// Pillow's `resize(LANCZOS)`: separable Lanczos-3 widened by the scale, premultiplied.
    static func lanczos(_ source: Bitmap, to size: PixelSize) -> Bitmap {
        let horizontal = lanczosWeights(inSize: source.width, outSize: size.width)
        let vertical = lanczosWeights(inSize: source.height, outSize: size.height)
        var rows = [[[Double]]](repeating: [], count: source.height)
        for y in 0..<source.height {
            rows[y] = horizontal.map { taps in
                taps.reduce(into: [0.0, 0, 0, 0]) { sum, tap in
                    let p = premultipliedPixel(source, tap.0, y)
                    for c in 0..<4 { sum[c] += p[c] * tap.1 }
                }
            }
        }
        return bitmap(width: size.width, height: size.height) { x, y in
            vertical[y].reduce(into: [0.0, 0, 0, 0]) { sum, tap in
                for c in 0..<4 { sum[c] += rows[tap.0][x][c] * tap.1 }
            }
        }
    }

    /// A true Gaussian (±4σ), edges repeated, premultiplied.
    static func gaussian(_ source: Bitmap, sigma: Double) -> Bitmap {
        let radius = Int((4 * sigma).rounded(.up))
        var kernel = (-radius...radius).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
        let total = kernel.reduce(0, +)
        kernel = kernel.map { $0 / total }
        let w = source.width, h = source.height
        var horizontal = [[Double]](repeating: [0, 0, 0, 0], count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                var sum = [0.0, 0, 0, 0]
                for k in -radius...radius {
                    let p = premultipliedPixel(source, min(max(x + k, 0), w - 1), y)
                    for c in 0..<4 { sum[c] += p[c] * kernel[k + radius] }
                }
                horizontal[y * w + x] = sum
            }
        }
        return bitmap(width: w, height: h) { x, y in
            var sum = [0.0, 0, 0, 0]
            for k in -radius...radius {
                let p = horizontal[min(max(y + k, 0), h - 1) * w + x]
                for c in 0..<4 { sum[c] += p[c] * kernel[k + radius] }
            }
            return sum
        }
    }

    /// Counter-clockwise rotation about the centre into `size`, bilinear, premultiplied, with
    /// everything outside the source transparent.
    static func rotate(_ source: Bitmap, radians: Double, size: PixelSize) -> Bitmap {
        let c = cos(radians), s = sin(radians)
        return bitmap(width: size.width, height: size.height) { x, y in
            let dx = Double(x) + 0.5 - Double(size.width) / 2, dy = Double(y) + 0.5 - Double(size.height) / 2
            let sx = c * dx - s * dy + Double(source.width) / 2 - 0.5
            let sy = s * dx + c * dy + Double(source.height) / 2 - 0.5
            let x0 = Int(floor(sx)), y0 = Int(floor(sy))
            let fx = sx - Double(x0), fy = sy - Double(y0)
            var sum = [0.0, 0, 0, 0]
            for (ox, oy, weight) in [
                (0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)), (0, 1, (1 - fx) * fy), (1, 1, fx * fy),
            ] {
                let px = x0 + ox, py = y0 + oy
                guard px >= 0, px < source.width, py >= 0, py < source.height else { continue }
                let p = premultipliedPixel(source, px, py)
                for channel in 0..<4 { sum[channel] += p[channel] * weight }
            }
            return sum
        }
    }
}
