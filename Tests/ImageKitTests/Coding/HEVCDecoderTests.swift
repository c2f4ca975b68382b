#if HEIF
import Foundation
import XCTest

@testable import ImageKit

/// Which HEVC decoder libheif uses (libavcodec with the `HEVCAVCodec` trait, else libde265), and
/// that hostile HEVC data is a typed error through it. Its pixels are checked by the HEIC round
/// trips (`JXLHEICEncodingTests`) and the formats corpus's references, which run through it.
final class HEVCDecoderTests: XCTestCase {
    func testTheTraitPicksTheDecoder() {
        #if HEVCAVCodec
        XCTAssertTrue(HEIFCoder.decodesHEVCWithLibavcodec, "the trait registers the libavcodec plugin")
        #else
        XCTAssertFalse(HEIFCoder.decodesHEVCWithLibavcodec, "without the trait libheif keeps libde265")
        #endif
    }

    func testDamagedHEVCDataIsATypedErrorOrAPictureNeverACrash() throws {
        let coders = ImageCodersManager.shared
        let image = TestImages.still(TestImages.gradient(width: 192, height: 128))
        let data = try coders.encode(image, as: .heic, options: ImageEncodingOptions(quality: 0.8))
        XCTAssertEqual(try coders.decode(data).bitmap.size, image.bitmap.size)
        // The coded picture is the file's tail (mdat after the boxes): bytes in it flipped, and
        // NAL lengths made to overrun, at spread positions.
        var outcomes = (errors: 0, pictures: 0)
        for step in 1...24 {
            var damaged = data
            let at = data.count / 2 + (data.count / 2 - 8) * step / 25
            damaged[at] ^= 0xA5
            damaged[at + 1] = 0xFF
            do {
                let decoded = try coders.decode(damaged)
                XCTAssertEqual(decoded.bitmap.size, image.bitmap.size)
                outcomes.pictures += 1
            } catch {
                outcomes.errors += 1
            }
        }
        XCTAssertEqual(outcomes.errors + outcomes.pictures, 24)
        // Cut short: the last NAL unit's length runs past the data.
        for cut in [1, 7, data.count / 4] {
            XCTAssertThrowsError(try coders.decode(data.prefix(data.count - cut))) { error in
                XCTAssertNotNil(error as? ImageError)
            }
        }
    }
}
#endif
