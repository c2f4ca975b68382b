import Foundation
import FuzzSupport
@testable import ImageKit

/// The GIF block walker and the wide-code LZW decoder.
exit(runFuzzer { input in
    let pixels = Int(input.byte()) * 64
    _ = GIFStructure.imageCount(input.bytes)
    if let frame = WideCodeFrame(input.bytes, descriptorAt: 0, codeSizes: 2...11) { _ = try? frame.decode(pixelCount: pixels) }
})
