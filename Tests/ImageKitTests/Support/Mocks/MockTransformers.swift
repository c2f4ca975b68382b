import Foundation
import XCTest

@testable import ImageKit

/// Halves width and height with the resampler.
struct HalfSize: ImageTransforming {
    var transformerKey: String { "Half" }
    func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        let options = ImageDecodingOptions(
            thumbnailPixelSize: PixelSize(width: image.width / 2, height: image.height / 2),
            preservesAspectRatio: false)
        let data = try ImageCodersManager.shared.encode(image, as: .png, options: .default)
        return try ImageCodersManager.shared.decode(data, options: options)
    }
}

struct Declining: ImageTransforming {
    var transformerKey: String { "Declining" }
    func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? { nil }
}
