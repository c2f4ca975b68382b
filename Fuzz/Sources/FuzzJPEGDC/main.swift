import Foundation
import FuzzSupport

@testable import ImageKit

/// The DC-only JPEG decoder (ik_jpeg_dc.c) directly, beside TurboJPEG's 1/8 decode.
exit(
    runFuzzer { input in
        let data = input.data
        _ = JPEGCoder.eighthScale(data, dcOnly: true)
    })
