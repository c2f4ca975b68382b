import Foundation
import XCTest

@testable import ImageKitServer

/// Both services' signatures against vectors published outside this project.
final class SignatureTests: XCTestCase {
    /// thumbor: the `thumbor_client` Elixir library's documented examples (HexDocs,
    /// thumbor_client 0.5.0, `ThumborClient.encrypt_to_thumbor/2` and `generate/2`, key "123").
    func testThumborPublishedVectors() {
        let signer = ThumborSigner(keys: ["123"])
        let vectors = [
            ("500/500/image.jpg", "VMKhXMULBn4h1UC52W3YliEgFfg="),
            ("500x400/smart/image.jpg", "rFZk5DrMK2hKAwVMJU4O4ZYDpeI="),
            ("200x200/my-image.jpg", "gliOovhxLB8RGXinV2YT_W607lw="),
        ]
        for (path, signature) in vectors {
            XCTAssertEqual(signer.sign(path), signature, path)
            XCTAssertTrue(signer.isValid(signature, for: path), path)
            XCTAssertFalse(signer.isValid(signature, for: path + "x"), path)
        }
    }

    /// imgproxy: the key and salt of imgproxy's own examples folder; expected signatures from
    /// an imgproxy Java test (basic URL format) and the imgproxy_python README (path split by '/').
    func testImgproxyPublishedVectors() throws {
        let signer = try ImgproxySigner(pairs: [
            (
                key: "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881",
                salt: "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
            )
        ])
        let vectors = [
            (
                "/fill/300/300/no/1/aHR0cDovL2ltZy5leGFtcGxlLmNvbS9wcmV0dHkvaW1hZ2UuanBn.png",
                "_PQ4ytCQMMp-1w1m_vP6g8Qb-Q7yF9mwghf6PddqxLw"
            ),
            (
                "/fill/300/300/ce/0/aHR0cDovL2ltZy5l/eGFtcGxlLmNvbS9w/cmV0dHkvaW1hZ2Uu/anBn",
                "6cy4IRuQ1nQW8qGVmNvPdynjmkuwUEx-XhGw_C_kQmA"
            ),
        ]
        for (path, signature) in vectors {
            XCTAssertEqual(signer.sign(path), signature, path)
            XCTAssertTrue(signer.isValid(signature, for: path), path)
            XCTAssertFalse(signer.isValid(signature, for: String(path.dropLast())), path)
        }
    }

    func testRotatedKeysAndMalformedSignatures() throws {
        let old = ThumborSigner(keys: ["old-key"])
        let rotated = ThumborSigner(keys: ["new-key", "old-key"])
        let path = "fit-in/256x256/example.com/a.jpg"
        XCTAssertTrue(rotated.isValid(old.sign(path), for: path), "URLs signed with the old key still work")
        XCTAssertEqual(rotated.sign(path), ThumborSigner(keys: ["new-key"]).sign(path), "new URLs use the first key")
        XCTAssertFalse(ThumborSigner(keys: ["new-key"]).isValid(old.sign(path), for: path), "a retired key is refused")
        for garbage in [
            "", "=", "not base64!", String(repeating: "A", count: 28), String(old.sign(path).dropLast(2)), "%3D%3D",
        ] {
            XCTAssertFalse(rotated.isValid(garbage, for: path), garbage)
        }
        let imgproxy = try ImgproxySigner(pairs: [(key: "aa", salt: "bb"), (key: "cc", salt: "dd")])
        let signed = try ImgproxySigner(pairs: [(key: "cc", salt: "dd")]).sign("/w:10/plain/http://a/b.jpg")
        XCTAssertTrue(imgproxy.isValid(signed, for: "/w:10/plain/http://a/b.jpg"))
        XCTAssertFalse(imgproxy.isValid(signed, for: "/w:11/plain/http://a/b.jpg"))
        XCTAssertThrowsError(try ImgproxySigner(pairs: [(key: "not hex", salt: "00")]))
    }

    func testAThumborSignatureSentWithPercentEncodedPaddingIsRead() throws {
        let signer = ThumborSigner(keys: ["123"])
        let request = try ImageRequest.parse(path: "/gliOovhxLB8RGXinV2YT_W607lw%3D/200x200/my-image.jpg")
        XCTAssertEqual(request.grammar, .thumbor)
        XCTAssertEqual(request.signature, "gliOovhxLB8RGXinV2YT_W607lw=")
        XCTAssertEqual(request.signedPath, "200x200/my-image.jpg")
        XCTAssertTrue(signer.isValid(request.signature!, for: request.signedPath))
    }
}
