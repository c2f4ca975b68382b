import Foundation
import FuzzSupport

@testable import ImageKit

/// The HEIF, AVIF and JPEG XL wrappers (the libraries are fuzzed upstream; this covers what
/// ImageKit adds: limits before allocation, thumbnail items, clap/irot/imir, frame loops,
/// colour profiles, the lazy AVIF and JPEG XL frame cursors, the header probes), chosen by the data's signature
/// through the manager.
let limits = DecodingLimits(maxPixelsPerFrame: 4 << 20, maxTotalBytes: 64 << 20, maxWorkingBytes: 64 << 20)
exit(
    runFuzzer { input in
        let flags = input.byte()
        var options = ImageDecodingOptions(limits: limits)
        if flags & 1 != 0 { options.thumbnailPixelSize = PixelSize(width: 40, height: 30) }
        options.firstFrameOnly = flags & 2 != 0
        options.keepsColorProfile = flags & 4 != 0
        let data = input.data
        _ = ImageProbe(data)
        _ = try? ImageCodersManager.shared.decode(data, options: options)
        if flags & 8 != 0, let animation = try? AnimatedImage(data: data, limits: limits) {
            // Frames in order, then a jump back and one forward (restore, rewind, skip).
            for index in [0, 1, 2, 1, 0, animation.frameCount - 1] where index >= 0 && index < animation.frameCount {
                _ = try? animation.frame(at: index)
            }
        }
    })
