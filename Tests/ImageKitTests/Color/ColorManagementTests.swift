import CImageCodecs
import CLCMS2
import Foundation
import XCTest

@testable import ImageKit

/// Colour management: the matrix/TRC fast path against Little CMS, what counts as sRGB, keeping
/// and embedding profiles, and profiles that cannot be used.
final class ColorManagementTests: XCTestCase {
    /// The profile embedded in a formats-corpus file.
    private func profile(_ path: String) throws -> ColorProfile {
        let image = try ImageCodersManager.shared.decode(FormatsCorpus.entry(path).data)
        return try XCTUnwrap(image.sourceColorProfile, path)
    }

    /// Every 4th code value of each channel (64³ colours), opaque.
    private func colourCube() throws -> Bitmap {
        let buffer = try PixelBuffer(width: 64 * 64, height: 64)
        for b in 0..<64 {
            let row = buffer.row(b)
            for g in 0..<64 {
                for r in 0..<64 {
                    let p = row + (g * 64 + r) * 4
                    p[0] = UInt8(r * 4 + r / 16); p[1] = UInt8(g * 4 + g / 16); p[2] = UInt8(b * 4 + b / 16); p[3] = 255
                }
            }
        }
        return buffer.freeze(isOpaque: true)
    }

    private func convertedCopy(_ bitmap: Bitmap, with conversion: ColorConversion) throws -> Bitmap {
        var buffer = try PixelBuffer(width: bitmap.width, height: bitmap.height)
        buffer.copyPixels(from: bitmap)
        let result = buffer.freeze(isOpaque: bitmap.isOpaque)
        conversion.convert(
            result.baseAddress, width: result.width, height: result.height, bytesPerRow: result.bytesPerRow)
        return result
    }

    /// Little CMS's transform of the same 8-bit pixels, unoptimised with float output, rounded:
    /// the exact answer the 8-bit fast path and Little CMS's own 8-bit transform approximate.
    private func lcmsCopy(_ bitmap: Bitmap, profile: ColorProfile, float: Bool) throws -> Bitmap {
        let handle = try XCTUnwrap(
            profile.iccData.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, cmsUInt32Number($0.count)) })
        defer { cmsCloseProfile(handle) }
        let srgb = cmsCreate_sRGBProfile()
        defer { cmsCloseProfile(srgb) }
        let intent = cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC)
        let transform = try XCTUnwrap(
            float
                ? cmsCreateTransform(
                    handle, IK_TYPE_RGB_8, srgb, IK_TYPE_RGB_FLT, intent, cmsUInt32Number(cmsFLAGS_NOOPTIMIZE))
                : cmsCreateTransform(handle, IK_TYPE_RGB_8, srgb, IK_TYPE_RGB_8, intent, 0))
        defer { cmsDeleteTransform(transform) }
        let buffer = try PixelBuffer(width: bitmap.width, height: bitmap.height)
        var input = [UInt8](repeating: 0, count: bitmap.width * 3)
        var floats = [Float](repeating: 0, count: bitmap.width * 3)
        var bytes = [UInt8](repeating: 0, count: bitmap.width * 3)
        for y in 0..<bitmap.height {
            bitmap.withRow(y) { row in
                for x in 0..<bitmap.width { for c in 0..<3 { input[x * 3 + c] = row[x * 4 + c] } }
            }
            let out = buffer.row(y)
            if float {
                cmsDoTransform(transform, input, &floats, cmsUInt32Number(bitmap.width))
                for x in 0..<bitmap.width {
                    for c in 0..<3 { out[x * 4 + c] = UInt8(max(0, min(255, (floats[x * 3 + c] * 255).rounded()))) }
                    out[x * 4 + 3] = 255
                }
            } else {
                cmsDoTransform(transform, input, &bytes, cmsUInt32Number(bitmap.width))
                for x in 0..<bitmap.width {
                    for c in 0..<3 { out[x * 4 + c] = bytes[x * 3 + c] }
                    out[x * 4 + 3] = 255
                }
            }
        }
        return buffer.freeze(isOpaque: true)
    }

    private func maxDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        zip(a.packedRGBA(), b.packedRGBA()).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }

    func testMatrixTRCFastPathIsWithinOneLevelOfLittleCMS() throws {
        let cube = try colourCube()
        for path in [
            "icc/jpeg/adobe.jpg", "icc/png/gradient-8b-displayp3-alpha.png", "icc/jpeg/prophoto.jpg",
            "icc/webp/p3-lossy.webp",
            "icc/png/Google-Pixel2XL-16bit_acescg_g1_v4_krita.png",
        ] {
            let profile = try profile(path)
            let conversion = try XCTUnwrap(ColorConversion.cached(for: profile.bytes))
            guard case .matrixTRC = conversion.kind else {
                return XCTFail("\(path): \(profile) is not on the fast path")
            }
            let exact = try lcmsCopy(cube, profile: profile, float: true)
            let fast = try convertedCopy(cube, with: conversion)
            XCTAssertLessThanOrEqual(
                maxDifference(fast, exact), 1, "\(path) (\(profile)): fast path vs Little CMS (float)")
            // Little CMS's own 8-bit transform is no closer (its 8-bit shaper tables lose more in
            // the shadows of linear-gamma profiles).
            let lcms8 = try lcmsCopy(cube, profile: profile, float: false)
            XCTAssertLessThanOrEqual(maxDifference(fast, exact), maxDifference(lcms8, exact), path)
            // The scalar loop (processors without AVX2) gives the same bytes.
            ik_set_avx2_allowed(0)
            let scalar = try convertedCopy(cube, with: conversion)
            ik_set_avx2_allowed(1)
            XCTAssertTrue(scalar.packedRGBA() == fast.packedRGBA(), "\(path): the scalar and AVX2 loops differ")
        }
    }

    func testSRGBProfilesUnderAnyNameLeaveThePixelsAlone() throws {
        for path in FormatsCorpusTests.builtIn([
            "avif/libavif/paris_icc_exif_xmp.avif", "tiff/pillow/hopper.iccprofile.tif",
            "heif/libheif/rainbow-451x461.heic",
        ]) {
            let profile = try profile(path)
            XCTAssertTrue(profile.isSRGB, "\(path): \(profile)")
            var keep = ImageDecodingOptions()
            keep.keepsColorProfile = true
            let data = try FormatsCorpus.entry(path).data
            let kept = try ImageCodersManager.shared.decode(data, options: keep)
            XCTAssertNil(kept.colorProfile, "an sRGB profile is not carried: the pixels are sRGB")
            XCTAssertEqual(
                kept.bitmap.packedRGBA(), try ImageCodersManager.shared.decode(data).bitmap.packedRGBA(), path)
        }
        for path in ["icc/jpeg/adobe.jpg", "icc/png/gradient-8b-displayp3-alpha.png", "icc/jpeg/cmyk-icc.jpg"] {
            XCTAssertFalse(try profile(path).isSRGB, path)
        }
        XCTAssertEqual(try profile("icc/png/gradient-8b-displayp3-alpha.png").profileDescription, "Display P3")
        XCTAssertEqual(try profile("icc/jpeg/cmyk-icc.jpg").colorSpace, .cmyk)
    }

    func testKeepingTheProfileKeepsThePixelsAndEncodersEmbedIt() throws {
        let entry = try FormatsCorpus.entry("icc/png/adobe.png")
        var keep = ImageDecodingOptions()
        keep.keepsColorProfile = true
        let kept = try ImageCodersManager.shared.decode(entry.data, options: keep)
        let profile = try XCTUnwrap(kept.colorProfile)
        XCTAssertEqual(profile.profileDescription, "A98C")
        XCTAssertEqual(
            clearedPSNR(kept.bitmap, try FormatsCorpus.reference(entry.rawReferenceURL)), 99,
            "stored pixels, unconverted")
        let converted = try ImageCodersManager.shared.decode(entry.data)
        XCTAssertNil(converted.colorProfile)
        XCTAssertEqual(converted.sourceColorProfile, profile)

        // Re-encoded with the profile, each format decodes (converted) to the same colours.
        let formats: [ImageFormat] = [.png, .jpeg, .webp] + TestImages.modernEncodableFormats
        for format in formats {
            let encoded = try ImageCodersManager.shared.encode(
                kept, as: format, options: ImageEncodingOptions(quality: 0.95))
            let again = try ImageCodersManager.shared.decode(encoded)
            XCTAssertEqual(again.sourceColorProfile, profile, "\(format) kept the profile")
            XCTAssertGreaterThan(
                clearedPSNR(again.bitmap, converted.bitmap), format == .png ? 99 - 0.001 : 33, "\(format)")
        }
    }

    func testAnUnusableProfileIsIgnoredNotAnError() throws {
        let base = try FormatsCorpus.entry("tiff/pillow/hopper_lzw.tif").data
        let image = try ImageCodersManager.shared.decode(base)
        let jpeg = try ImageCodersManager.shared.encode(image, as: .jpeg, options: .default)
        let garbage = ColorProfile(
            bytes: [UInt8](repeating: 0x41, count: 300), description: nil, colorSpace: .rgb, isSRGB: false)
        let tagged = ColorProfileEmbedding.jpeg(jpeg, garbage)
        XCTAssertGreaterThan(tagged.count, jpeg.count)
        let decoded = try ImageCodersManager.shared.decode(tagged)
        XCTAssertNil(decoded.sourceColorProfile)
        XCTAssertEqual(decoded.bitmap.packedRGBA(), try ImageCodersManager.shared.decode(jpeg).bitmap.packedRGBA())
        XCTAssertThrowsError(try ColorProfile(iccData: Data(repeating: 0x41, count: 300))) { error in
            XCTAssertEqual((error as? ImageError)?.code, .badImageData)
        }
    }

    func testCMYKWithAProfileGoesThroughLittleCMS() throws {
        let entry = try FormatsCorpus.entry("icc/jpeg/cmyk-icc.jpg")
        let image = try ImageCodersManager.shared.decode(entry.data)
        XCTAssertTrue(image.isOpaque)
        let reference = try FormatsCorpus.reference(entry.referenceURL),
            raw = try FormatsCorpus.reference(entry.rawReferenceURL)
        XCTAssertGreaterThan(clearedPSNR(image.bitmap, reference), 45)
        XCTAssertLessThan(clearedPSNR(image.bitmap, raw), 25, "not the plain 255 × (1 − C)(1 − K) formula")
    }
}
