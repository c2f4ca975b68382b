import Foundation
import XCTest

@testable import ImageKit

#if AVIF
import CAVIF
#endif
#if HEIF
import CHeif
#endif

/// HEIF and AVIF take their orientation from the file's own transform properties (`irot`,
/// `imir`) only, as MIAF and browsers do: an EXIF or XMP orientation inside is not applied. Each
/// test writes a 40 × 20 image (red left half, blue right half) carrying EXIF and XMP orientation
/// 6 and no `irot`, then checks that it decodes 40 × 20, red on the left.
final class MetadataOrientationTests: XCTestCase {
    /// A big-endian TIFF header with one IFD entry: Orientation = 6 (a quarter turn).
    static let exif: [UInt8] = [
        0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01,
        0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]
    static let xmp = Array(
        (#"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">"#
            + #"<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" "#
            + #"xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="6"/></rdf:RDF></x:xmpmeta>"#
            + #"<?xpacket end="w"?>"#).utf8)

    static func pixel(_ x: Int, _ y: Int) -> (UInt8, UInt8, UInt8) { x < 20 ? (255, 0, 0) : (0, 0, 255) }

    private func assertUpright(_ data: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        let image = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(image.bitmap.size, PixelSize(width: 40, height: 20), file: file, line: line)
        let pixels = image.bitmap.packedRGBA()
        let left = Array(pixels[(10 * 40 + 2) * 4..<(10 * 40 + 2) * 4 + 3])
        XCTAssertGreaterThan(left[0], 200, "red stays on the left: \(left)", file: file, line: line)
        XCTAssertLessThan(left[2], 60, "\(left)", file: file, line: line)
    }

    #if HEIF
    func testHEIFIgnoresEXIFAndXMPOrientation() throws {
        let data = try HEICWriter.write(
            width: 40, height: 20, quality: 95,
            fill: { row, y in
                let bytes = row.assumingMemoryBound(to: UInt8.self)
                for x in 0..<40 {
                    let (r, g, b) = Self.pixel(x, y)
                    (bytes[x * 3], bytes[x * 3 + 1], bytes[x * 3 + 2]) = (r, g, b)
                }
            },
            finish: { context, image in
                XCTAssertEqual(
                    heif_context_add_exif_metadata(context, image, Self.exif, Int32(Self.exif.count)).code,
                    heif_error_Ok)
                XCTAssertEqual(
                    heif_context_add_XMP_metadata(context, image, Self.xmp, Int32(Self.xmp.count)).code, heif_error_Ok)
            })
        try assertUpright(data)
    }
    #endif

    #if AVIF
    func testAVIFIgnoresEXIFAndXMPOrientation() throws {
        let image = try XCTUnwrap(avifImageCreate(40, 20, 8, AVIF_PIXEL_FORMAT_YUV444))
        defer { avifImageDestroy(image) }
        avifImageSetMetadataExif(image, Self.exif, Self.exif.count)
        avifImageSetMetadataXMP(image, Self.xmp, Self.xmp.count)
        // libavif turns an EXIF orientation into irot/imir when it is set: take them off, so the
        // file carries the metadata orientation alone.
        image.pointee.transformFlags = UInt32(AVIF_TRANSFORM_NONE.rawValue)
        var pixels = [UInt8](repeating: 255, count: 40 * 20 * 4)
        for y in 0..<20 {
            for x in 0..<40 {
                let (r, g, b) = Self.pixel(x, y)
                pixels[(y * 40 + x) * 4] = r
                pixels[(y * 40 + x) * 4 + 1] = g
                pixels[(y * 40 + x) * 4 + 2] = b
            }
        }
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = 8
        rgb.rowBytes = 40 * 4
        let converted = pixels.withUnsafeMutableBufferPointer { buffer -> avifResult in
            rgb.pixels = buffer.baseAddress
            return avifImageRGBToYUV(image, &rgb)
        }
        XCTAssertEqual(converted, AVIF_RESULT_OK)
        let encoder = try XCTUnwrap(avifEncoderCreate())
        defer { avifEncoderDestroy(encoder) }
        encoder.pointee.speed = 10
        var output = avifRWData()
        defer { avifRWDataFree(&output) }
        XCTAssertEqual(avifEncoderWrite(encoder, image, &output), AVIF_RESULT_OK)
        try assertUpright(Data(bytes: try XCTUnwrap(output.data), count: output.size))
    }
    #endif
}
