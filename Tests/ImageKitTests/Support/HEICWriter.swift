#if HEIF
import CHeif
import Foundation
import XCTest

/// HEIC files written with libheif for tests: one image of interleaved RGB samples (8 bits, or
/// 16-bit little-endian words holding `bitDepth` bits), through libheif's HEVC encoder.
enum HEICWriter {
    /// `fill` writes row `y` of the picture; `prepare` may change the picture and the encoding
    /// options before encoding; `finish` may add to the context once the image is encoded (its
    /// handle), before the file is written.
    static func write(
        width: Int, height: Int, bitDepth: Int = 8, quality: Int32,
        fill: (_ row: UnsafeMutableRawPointer, _ y: Int) -> Void,
        prepare: (_ picture: OpaquePointer, _ options: UnsafeMutablePointer<heif_encoding_options>) throws -> Void = {
            _, _ in
        },
        finish: (_ context: OpaquePointer, _ image: OpaquePointer) throws -> Void = { _, _ in }
    ) throws -> Data {
        let context = try XCTUnwrap(heif_context_alloc())
        defer { heif_context_free(context) }
        var found: OpaquePointer?
        XCTAssertEqual(heif_context_get_encoder_for_format(context, heif_compression_HEVC, &found).code, heif_error_Ok)
        let encoder = try XCTUnwrap(found)
        defer { heif_encoder_release(encoder) }
        heif_encoder_set_lossy_quality(encoder, quality)
        var created: OpaquePointer?
        let chroma = bitDepth > 8 ? heif_chroma_interleaved_RRGGBB_LE : heif_chroma_interleaved_RGB
        XCTAssertEqual(
            heif_image_create(Int32(width), Int32(height), heif_colorspace_RGB, chroma, &created).code, heif_error_Ok)
        let picture = try XCTUnwrap(created)
        defer { heif_image_release(picture) }
        heif_image_add_plane(picture, heif_channel_interleaved, Int32(width), Int32(height), Int32(bitDepth))
        var stride: Int32 = 0
        let plane = try XCTUnwrap(heif_image_get_plane(picture, heif_channel_interleaved, &stride))
        for y in 0..<height { fill(UnsafeMutableRawPointer(plane + y * Int(stride)), y) }
        let options = try XCTUnwrap(heif_encoding_options_alloc())
        defer { heif_encoding_options_free(options) }
        try prepare(picture, options)
        var handle: OpaquePointer?
        XCTAssertEqual(heif_context_encode_image(context, picture, encoder, options, &handle).code, heif_error_Ok)
        let image = try XCTUnwrap(handle)
        defer { heif_image_handle_release(image) }
        try finish(context, image)
        let directory = TemporaryDirectory("heic-writer")
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("image.heic").path
        XCTAssertEqual(heif_context_write_to_file(context, path).code, heif_error_Ok)
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }
}
#endif
