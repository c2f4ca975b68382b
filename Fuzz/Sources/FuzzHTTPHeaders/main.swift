import Foundation
import FuzzSupport

@testable import ImageKit

/// The downloader's header-line parser and the cache headers read from its output.
exit(
    runFuzzer { input in
        var headers: [String: String] = [:]
        for line in input.bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let parsed = line.withUnsafeBytes { CurlTransfer.parseHeaderLine($0.bindMemory(to: UInt8.self)) }
            if case .field(let name, let value)? = parsed { headers[name] = value }
        }
        let response = ImageLoadResponse(
            url: URL(string: "https://fuzz.example/a.jpg")!, data: Data(), headers: headers)
        let http = response.cacheHeaders
        _ = http.maxAge
        _ = http.requiresRevalidation
        _ = http.expiryDate(receivedAt: Date())
    })
