import Foundation
import FuzzSupport

@testable import ImageKit

/// The Swift BMP and ICO parsers: the first byte picks the container (even: BMP, odd: ICO) and
/// whether a thumbnail is asked for (streamed rows, the resampler), the rest is the file.
let limits = DecodingLimits(maxPixelsPerFrame: 4 << 20, maxTotalBytes: 64 << 20, maxWorkingBytes: 64 << 20)
exit(
    runFuzzer { input in
        let flags = input.byte()
        var options = ImageDecodingOptions(limits: limits)
        if flags & 2 != 0 { options.thumbnailPixelSize = PixelSize(width: 17, height: 9) }
        if flags & 1 == 0 {
            _ = try? BMPCoder().decode(input.data, options: options)
        } else {
            _ = try? ICOCoder().decode(input.data, options: options)
        }
    })
