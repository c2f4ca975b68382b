import Foundation
import FuzzSupport

@testable import ImageKit

/// CacheKey rendering and identity, the key filters, on fuzzer-chosen URL strings.
exit(
    runFuzzer { input in
        let flags = input.byte()
        let text = input.string
        var key = CacheKey(text)
        if flags & 1 != 0 { key = key.transformed(by: "T(\(flags))") }
        if flags & 2 != 0 { key = key.thumbnail(width: 64, height: 32, preservesAspectRatio: flags & 4 != 0) }
        if flags & 8 != 0 { key = key.decoded(as: "ScaleDown(1)") }
        _ = key.rendered
        _ = key.identity
        _ = CacheKey.inserting("X", into: text)
        if let url = URL(string: text) {
            _ = CacheKey(url: url, filter: .removingQueryItems(["sig", "token"])).identity
            _ = CacheKey(url: url, filter: .removingQuery).rendered
            _ = DiskCache.fileName(forKey: text)
        }
    })
