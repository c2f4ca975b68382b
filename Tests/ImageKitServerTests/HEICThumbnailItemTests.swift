#if HEIF
import Foundation
import ImageKit
import XCTest

@testable import ImageKitServer

/// The service plans a HEIC from its header (ImageProbe parses the boxes) and so decodes at the
/// plan's size: a phone-style file's own thumbnail item answers when it covers the result, the
/// primary image when it does not — as libvips does.
final class HEICThumbnailItemTests: XCTestCase {
    /// A 1280×960 HEIC, blue, whose 320×240 thumbnail item is red (so the test sees which was
    /// decoded), 1.5 KB. Written by libheif 1.15 with x265 at quality 50:
    /// `heif_context_encode_image` of the blue picture, then `heif_context_encode_thumbnail` of a
    /// red one with bounding box 320.
    static let source = Data(
        base64Encoded: """
            AAAAKGZ0eXBoZWljAAAAAG1pZjFoZWljbWlhZm1pZjFoZWljbWlhZgAAAiZtZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0
            AAAAAAAAAAAAAAAAAAAAAA5waXRtAAAAAAABAAAANGlsb2MAAAAAREAAAgABAAAAAAJWAAEAAAAAAAADNQACAAAAAAWLAAEA
            AAAAAAAAZgAAADhpaW5mAAAAAAACAAAAFWluZmUCAAAAAAEAAGh2YzEAAAAAFWluZmUCAAAAAAIAAGh2YzEAAAABZWlwcnAA
            AAFBaXBjbwAAAHlodmNDAQNwAAAAAAAAAAAAePAA/P34+AAADwMgAAEAGEABDAH//wNwAAADAJAAAAMAAAMAeLoCQCEAAQAs
            QgEBA3AAAAMAkAAAAwAAAwB4oAKAgDwWW6kkprm4EBAwIAAAAwAgAAADACEiAAEAB0QBwXKwYkAAAAAUaXNwZQAAAAAAAAUA
            AAADwAAAABBwaXhpAAAAAAMICAgAAAB4aHZjQwEDcAAAAAAAAAAAADzwAPz9+PgAAA8DIAABABhAAQwB//8DcAAAAwCQAAAD
            AAADADy6AkAhAAEAK0IBAQNwAAADAJAAAAMAAAMAPKAKCA8WW6kkprm4EBAwIAAAAwAgAAADACEiAAEAB0QBwXKwYkAAAAAU
            aXNwZQAAAAAAAAFAAAAA8AAAABBwaXhpAAAAAAMICAgAAAAcaXBtYQAAAAAAAAACAAEDgQKDAAIDhAWGAAAAGmlyZWYAAAAA
            AAAADnRobWIAAgABAAEAAAOjbWRhdAAAAzEoAa8THnlt2zZozZMmTJixYsLmqHDT//6eFFf+xJav+WKa0nm9kO5rs7ZgRS2l
            AAAI0AAOEABzAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAGLAowIpbSgAAEaAAJQABVAAAAMAAAMAAAMA
            AAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAP+TAADHAAcwAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAAD
            AAADAAADAAADAAADADLghwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwBxwAAA
            AwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwHJAAADAAADAAADAAADAAADAAADAAAD
            AAADAAADAAADAAADAAADAAADAAADAAADAAADAACcgAAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAA
            AwAAAwAAAwAKWAAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAtoAAAAwAAAwAAAwAA
            AwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwB1QAAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAA
            AwAAAwAAAwAAAwAAAwAAAwDsgAAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwGBAAAD
            AAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAAADAl4AAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMA
            AAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMDegAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAAAwAA
            BUQAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAMAAAcsAAAAYigBrxMhojz45qhw0//9oFH/
            8AmeH5Pcy0nm9kO5rs7ZgRS2lAAAI0AAaUCjAiltKAAARoAAlAAFUAGfkwAAxwAHMAAAAwAAAwB4wIcAAAMAAAMAAAMAAAMA
            AAMAAAMAAAxo
            """, options: .ignoreUnknownCharacters)!

    func testTheThumbnailItemAnswersWhenItCoversTheResult() throws {
        let probe = try XCTUnwrap(ImageProbe(Self.source))
        XCTAssertEqual([probe.width, probe.height], [1280, 960])
        let cases: [(path: String, size: [Int], fromThumbnail: Bool)] = [
            ("/_/rs:fit:256:256/plain/http://example.com/a.heic@png", [256, 192], true),
            ("/unsafe/fit-in/200x200/filters:format(png)/example.com/a.heic", [200, 150], true),
            ("/_/rs:fit:320:320/plain/http://example.com/a.heic@png", [320, 240], true),
            ("/_/rs:fit:640:640/plain/http://example.com/a.heic@png", [640, 480], false),
            ("/unsafe/100x100/filters:format(png)/example.com/a.heic", [100, 100], true),
        ]
        for (path, size, fromThumbnail) in cases {
            let result = try ImageProcessor().process(Self.source, request: try ImageRequest.parse(path: path))
            XCTAssertEqual([result.width, result.height], size, path)
            let pixels = try ImageCodersManager.shared.decode(result.data).frames[0].bitmap
            let centre = pixels[pixels.width / 2, pixels.height / 2]
            if fromThumbnail {
                XCTAssertGreaterThan(Int(centre.r), 150, "\(path): the red thumbnail item, got \(centre)")
                XCTAssertLessThan(Int(centre.b), 100, "\(path)")
            } else {
                XCTAssertGreaterThan(Int(centre.b), 150, "\(path): the blue primary image, got \(centre)")
                XCTAssertLessThan(Int(centre.r), 100, "\(path)")
            }
        }
    }
}
#endif
