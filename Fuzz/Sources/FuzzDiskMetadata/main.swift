import Foundation
import FuzzSupport

@testable import ImageKit

/// DiskCacheMetadata decoding (the xattr or sidecar text), then the HTTP freshness rules on
/// what it held.
exit(
    runFuzzer { input in
        if let metadata = DiskCacheMetadata.decode(Array(input.bytes), lastAccessDate: nil) {
            _ = metadata.encoded()
            _ = metadata.isFresh(at: Date())
            _ = metadata.http?.maxAge
            _ = metadata.http?.expiryDate(receivedAt: Date())
        }
        _ = HTTPDate.parse(input.string)
    })
