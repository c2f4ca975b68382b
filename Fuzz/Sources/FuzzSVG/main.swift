import Foundation
import FuzzSupport

@testable import ImageKit

/// SVG: the entity budget over the raw bytes, then librsvg through SVGCoder (the document is a
/// fuzzer-made one; the first byte picks a thumbnail size, the limits keep drawing small).
let limits = DecodingLimits(maxPixelsPerFrame: 1 << 20, maxTotalBytes: 16 << 20, maxWorkingBytes: 32 << 20)
exit(
    runFuzzer { input in
        let flags = input.byte()
        var options = ImageDecodingOptions(limits: limits)
        if flags & 1 != 0 { options.thumbnailPixelSize = PixelSize(width: 1 + Int(flags >> 1), height: 32) }
        let data = input.data
        _ = try? data.withUnsafeBytes { bytes in try SVGEntityBudget.expandedDocument(bytes, limit: 1 << 20) }
        _ = try? SVGCoder().decode(data, options: options)
    })
