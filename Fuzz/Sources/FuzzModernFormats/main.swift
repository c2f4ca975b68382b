import Foundation
import FuzzSupport
@testable import ImageKit

/// The HEIF, AVIF and JPEG XL wrappers (the libraries are fuzzed upstream; this covers what
/// ImageKit adds: limits before allocation, thumbnail items, clap/irot/imir, frame loops,
/// colour profiles), chosen by the data's signature through the manager.
let limits = DecodingLimits(maxPixelsPerFrame: 4 << 20, maxTotalBytes: 64 << 20, maxWorkingBytes: 64 << 20)
exit(runFuzzer { input in
    let flags = input.byte()
    var options = ImageDecodingOptions(limits: limits)
    if flags & 1 != 0 { options.thumbnailPixelSize = PixelSize(width: 40, height: 30) }
    options.firstFrameOnly = flags & 2 != 0
    options.keepsColorProfile = flags & 4 != 0
    _ = try? ImageCodersManager.shared.decode(input.data, options: options)
})
