import Foundation
import FuzzSupport

@testable import ImageKit

/// The APNG chunk walker (acTL, fcTL, fdAT) and the PNG chunk checks.
exit(
    runFuzzer { input in
        _ = PNGChunks.headerDefect(input.bytes)
        _ = PNGChunks.hasAnimationControl(input.bytes)
        if let animation = APNGAnimation(input.bytes) { _ = animation.frames.count }
    })
