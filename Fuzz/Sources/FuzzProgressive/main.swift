import Foundation
import FuzzSupport

@testable import ImageKit

/// ProgressiveDecoder fed the input in fuzzer-chosen chunk sizes, a preview after each chunk,
/// then the final image.
exit(
    runFuzzer { input in
        let flags = input.byte()
        let chunk = Int(input.byte()) * 16 + 1
        var options = ImageDecodingOptions()
        if flags & 1 != 0 { options.thumbnailPixelSize = PixelSize(64) }
        options.firstFrameOnly = flags & 2 != 0
        let data = input.data
        let decoder = ProgressiveDecoder(options: options)
        var end = 0
        while end < data.count {
            end = min(data.count, end + chunk)
            decoder.update(data.prefix(end), isFinal: end == data.count)
            _ = decoder.preview()
        }
        decoder.update(data, isFinal: true)
        _ = try? decoder.finalImage()
    })
