#if HEIF
import CHeif
import Foundation
import XCTest
@testable import ImageKit

/// HEIC thumbnails come from the file's embedded thumbnail item when it covers the request.
final class HEIFThumbnailTests: XCTestCase {
    /// A `width × height` HEIC of one colour with a 320 px thumbnail item of another colour (so
    /// the test can tell which one was decoded), written by libheif with x265.
    private func heic(width: Int, height: Int, main: (UInt8, UInt8, UInt8), thumbnail: (UInt8, UInt8, UInt8)) throws
        -> Data
    {
        let context = try XCTUnwrap(heif_context_alloc())
        defer { heif_context_free(context) }
        var found: OpaquePointer?
        // Debian's libheif writes HEVC with x265 (a dependency of libheif1): a missing encoder
        // is a failure, not a reason to skip.
        XCTAssertEqual(heif_context_get_encoder_for_format(context, heif_compression_HEVC, &found).code, heif_error_Ok)
        let encoder = try XCTUnwrap(found, "libheif has no HEVC encoder")
        defer { heif_encoder_release(encoder) }
        heif_encoder_set_lossy_quality(encoder, 90)
        func image(_ color: (UInt8, UInt8, UInt8)) throws -> OpaquePointer {
            var image: OpaquePointer?
            XCTAssertEqual(
                heif_image_create(Int32(width), Int32(height), heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image)
                    .code,
                heif_error_Ok)
            let created = try XCTUnwrap(image)
            heif_image_add_plane(created, heif_channel_interleaved, Int32(width), Int32(height), 8)
            var stride: Int32 = 0
            let plane = try XCTUnwrap(heif_image_get_plane(created, heif_channel_interleaved, &stride))
            for y in 0..<height {
                for x in 0..<width {
                    let p = plane + y * Int(stride) + x * 3
                    p[0] = color.0; p[1] = color.1; p[2] = color.2
                }
            }
            return created
        }
        let mainImage = try image(main), thumbnailImage = try image(thumbnail)
        defer { heif_image_release(mainImage); heif_image_release(thumbnailImage) }
        var handle: OpaquePointer?
        XCTAssertEqual(heif_context_encode_image(context, mainImage, encoder, nil, &handle).code, heif_error_Ok)
        let mainHandle = try XCTUnwrap(handle)
        defer { heif_image_handle_release(mainHandle) }
        var thumbnailHandle: OpaquePointer?
        XCTAssertEqual(
            heif_context_encode_thumbnail(context, thumbnailImage, mainHandle, encoder, nil, 320, &thumbnailHandle)
                .code,
            heif_error_Ok)
        if let thumbnailHandle { heif_image_handle_release(thumbnailHandle) }
        final class Sink { var data = Data() }
        let sink = Sink()
        var writer = heif_writer(
            writer_api_version: 1,
            write: { _, bytes, size, user in
                Unmanaged<Sink>.fromOpaque(user!).takeUnretainedValue().data.append(
                    bytes!.assumingMemoryBound(to: UInt8.self), count: size)
                return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: nil)
            })
        XCTAssertEqual(
            heif_context_write(context, &writer, Unmanaged.passUnretained(sink).toOpaque()).code, heif_error_Ok)
        return sink.data
    }

    func testSmallThumbnailsComeFromTheEmbeddedThumbnailItem() throws {
        let data = try heic(width: 1280, height: 960, main: (20, 40, 220), thumbnail: (230, 30, 30))
        XCTAssertEqual(ImageSignature(data).format, .heic)
        let full = try ImageCodersManager.shared.decode(data)
        XCTAssertEqual(full.bitmap.size, PixelSize(width: 1280, height: 960))
        XCTAssertGreaterThan(full.bitmap[640, 480].b, 180, "the main image is blue")

        // 200 px fits inside the 320 × 240 thumbnail item: decoded from it (red), at the target size.
        let small = try ImageCodersManager.shared.decode(
            data, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(200)))
        XCTAssertEqual(small.bitmap.size, PixelSize(width: 200, height: 150))
        XCTAssertGreaterThan(small.bitmap[100, 75].r, 180, "served by the thumbnail item")

        // 400 px is larger than the item: decoded from the main image.
        let large = try ImageCodersManager.shared.decode(
            data, options: ImageDecodingOptions(thumbnailPixelSize: PixelSize(400)))
        XCTAssertEqual(large.bitmap.size, PixelSize(width: 400, height: 300))
        XCTAssertGreaterThan(large.bitmap[200, 150].b, 180, "the thumbnail item is too small for 400 px")

        // A byte budget alone (scale-down) never uses the thumbnail item.
        let scaled = try ImageCodersManager.shared.decode(
            data, options: ImageDecodingOptions(scaleDownLimitBytes: 100 * 75 * 4))
        XCTAssertGreaterThan(scaled.bitmap[scaled.width / 2, scaled.height / 2].b, 180)
    }
}
#endif
