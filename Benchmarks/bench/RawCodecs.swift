import CRawCodecs
import Foundation
import ImageKit

/// The raw-library baseline: the C decoders in CRawCodecs, picked by signature.
final class RawDecoder {
    let jpeg = ik_raw_tj_decompressor()!
    deinit { ik_raw_tj_destroy(jpeg) }

    /// Decodes and frees; returns false when the library refused the data.
    @discardableResult
    func decode(_ data: Data, format: ImageFormat) -> Bool {
        var image = ik_raw_image()
        let status: Int32 = data.withUnsafeBytes { bytes in
            switch format {
            case .jpeg: ik_raw_jpeg_decode(jpeg, bytes.baseAddress!, bytes.count, &image)
            case .png: ik_raw_png_decode(bytes.baseAddress!, bytes.count, &image)
            case .gif: ik_raw_gif_decode(bytes.baseAddress!, bytes.count, &image)
            case .webp: ik_raw_webp_decode(bytes.baseAddress!, bytes.count, &image)
            default: -1
            }
        }
        ik_raw_image_free(&image)
        return status == 0
    }
}
