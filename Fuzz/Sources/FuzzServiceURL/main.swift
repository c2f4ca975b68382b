import Foundation
import FuzzSupport

@testable import ImageKitServer

/// The image service's request layer: routing, thumbor's and imgproxy's grammars (with
/// presets), the canonical key, both renderers (a parsed request renders to a path that parses
/// to the same operations) and both signature checks. Nothing may crash or hang.
let presets = ["thumb": ["rs:fit:256:256", "q:80"], "nest": ["pr:thumb", "f:webp"], "loop": ["pr:loop"]]
let thumbor = ThumborSigner(keys: ["k1", "k2"])
let imgproxy = try! ImgproxySigner(pairs: [(key: "943b421c", salt: "520f986b")])

exit(
    runFuzzer { input in
        var input = input
        let mode = input.byte()
        let path = input.string
        let request: ImageRequest
        do throws(ImageServiceError) {
            switch mode % 3 {
            case 0: request = try ImageRequest.parse(path: path, presets: presets)
            case 1: request = try ThumborURL.parse(path)
            default: request = try ImgproxyURL.parse(path, presets: presets)
            }
        } catch {
            precondition((400..<600).contains(error.status), "an error answers with an HTTP error status")
            return
        }
        _ = request.operations.canonicalKey
        if let signature = request.signature {
            _ = thumbor.isValid(signature, for: request.signedPath)
            _ = imgproxy.isValid(signature, for: request.signedPath)
        }
        // Round trips: what a grammar renders, it parses back to the same operations.
        switch request.grammar {
        case .thumbor:
            let rendered = "/unsafe/" + ThumborURL.path(for: request.operations, source: request.source)
            if let again = try? ThumborURL.parse(rendered) {
                precondition(again.operations == request.operations, "thumbor round trip: \(path) → \(rendered)")
            }
        case .imgproxy:
            let rendered = "/_" + ImgproxyURL.path(for: request.operations, source: request.source)
            _ = try? ImgproxyURL.parse(rendered, presets: [:])
        }
    })
