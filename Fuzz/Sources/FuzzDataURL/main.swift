import Foundation
import FuzzSupport

@testable import ImageKit

/// The data: URL loader's parser (RFC 2397, base64 and percent-encoded).
exit(
    runFuzzer { input in
        _ = DataURLLoader.decode("data:" + input.string)
    })
