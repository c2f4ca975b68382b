import Foundation
import FuzzSupport

@testable import ImageKit

/// The libtiff wrapper (memory I/O callbacks, tag reads through va_list, the direct scanline
/// path and the RGBA interface, unpremultiplying, CMYK with a profile, the header probe),
/// optionally scaled.
let limits = DecodingLimits(maxPixelsPerFrame: 4 << 20, maxTotalBytes: 64 << 20, maxWorkingBytes: 64 << 20)
exit(
    runFuzzer { input in
        let flags = input.byte()
        var options = ImageDecodingOptions(limits: limits)
        if flags & 1 != 0 { options.thumbnailPixelSize = PixelSize(width: 33, height: 20) }
        options.appliesOrientation = flags & 2 == 0
        _ = ImageProbe(input.data)
        _ = try? TIFFCoder().decode(input.data, options: options)
    })
