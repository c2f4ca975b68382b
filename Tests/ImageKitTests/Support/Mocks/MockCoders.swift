import Foundation
import XCTest

@testable import ImageKit

/// A JPEG "decoder" that blocks until released, to cancel a load while it decodes.
final class SlowCoder: ImageCoding {
    let started = Locked(false)
    private let gate = DispatchSemaphore(value: 0)
    func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .jpeg }
    func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        started.withLock { $0 = true }
        gate.wait()
        return try JPEGCoder().decode(data, options: options)
    }
    func release() { gate.signal() }
    func canEncode(_ format: ImageFormat) -> Bool { false }
    func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError) -> Data
    {
        throw ImageError(.encodingFailed, "no")
    }
}
