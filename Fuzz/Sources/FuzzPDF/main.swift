import Foundation
import FuzzSupport

@testable import ImageKit

/// PDF: poppler through PDFCoder (the first byte picks a thumbnail size and a page; the limits
/// keep drawing small), and the page count.
let limits = DecodingLimits(maxPixelsPerFrame: 1 << 20, maxTotalBytes: 16 << 20, maxWorkingBytes: 32 << 20)
exit(
    runFuzzer { input in
        let flags = input.byte()
        var options = ImageDecodingOptions(limits: limits)
        options.thumbnailPixelSize = PixelSize(width: 1 + Int(flags >> 2), height: 64)
        if flags & 1 != 0 { options.pages = .page(Int(flags >> 1 & 1)) }
        let data = input.data
        _ = PDFCoder.pageCount(data)
        _ = try? PDFCoder().decode(data, options: options)
    })
