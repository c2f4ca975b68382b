import Foundation
import FuzzSupport

@testable import ImageKit

/// One-shot decode of any format through ImageCodersManager, with the option combinations
/// that change code paths: thumbnail, scale-down, first frame only, kept orientation,
/// partial images, non-aspect thumbnails.
exit(
    runFuzzer { input in
        let flags = input.byte()
        let side = Int(input.byte()) + 1
        var options = ImageDecodingOptions()
        options.firstFrameOnly = flags & 1 != 0
        options.appliesOrientation = flags & 2 == 0
        options.allowsPartialImages = flags & 4 != 0
        if flags & 8 != 0 { options.thumbnailPixelSize = PixelSize(width: side, height: side * 3 / 4 + 1) }
        if flags & 16 != 0 { options.preservesAspectRatio = false }
        if flags & 32 != 0 { options.scaleDownLimitBytes = side * 4096 }
        _ = try? ImageCodersManager.shared.decode(input.data, options: options)
    })
