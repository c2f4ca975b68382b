import Foundation
import FuzzSupport

@testable import ImageKit

/// The EXIF (TIFF) and XMP orientation readers.
exit(
    runFuzzer { input in
        _ = ExifReader.orientation(exifPayload: input.bytes)
        _ = ExifReader.orientation(tiff: input.bytes)
        _ = ExifReader.orientation(xmp: input.bytes)
        _ = JPEGMarkers(input.bytes).orientation
    })
