import Foundation
import ImageKit
import ImageKitServer
import XCTest

/// thumbor's own integration matrix (`integration_tests/urls_helpers.py`, its `single_dataset`):
/// every option and filter of its list on each of its nine test images (committed in
/// `Tests/thumbor/integration-images`), through the service, against a loopback origin that
/// serves them. thumbor expects each URL to answer 200; so does this test, but for the forms
/// listed in `notYet`, which answer 400 `unknownFilter` until they are built (asserted, not
/// skipped: when one starts to answer, this test says so).
final class ThumborMatrixTests: XCTestCase {
    static let options: [String] = {
        let trims = ["trim", "trim:top-left", "trim:bottom-right", "trim:top-left:10", "trim:bottom-right:20"]
        let fitIns = ["fit-in", "adaptive-fit-in", "full-fit-in", "adaptive-full-fit-in"]
        let sizes = ["200x200", "-300x100", "100x-300", "-100x-300", "origx300", "200xorig", "origxorig"]
        let filters = [
            "brightness(10)", "contrast(10)", "equalize()", "grayscale()", "rotate(90)", "noise(10)", "quality(5)",
            "redeye()", "rgb(10,-10,20)", "round_corner(20,255,255,100)", "sharpen(6,2.5,false)",
            "sharpen(6,2.5,true)", "strip_exif()", "strip_icc()", "watermark(rgba-interlaced.png,10,10,50)",
            "watermark(rgba-interlaced.png,center,center,50)", "watermark(rgba-interlaced.png,repeat,repeat,50)",
            "frame(rgba.png)", "fill(ff0000)", "fill(auto)", "fill(ff0000,true)", "fill(transparent)",
            "fill(transparent,true)", "blur(2)", "extract_focal()", "focal()", "focal(0x0:1x1)", "no_upscale()",
            "gifv()", "gifv(webm)", "gifv(mp4)", "max_age(600)", "upscale()", "format(avif)", "format(heic)",
            "format(heif)",
            "curve([(0,0),(255,255)],[(0,50),(16,51),(32,69),(58,85),(92,120),(128,170),(140,186),(167,225),"
                + "(192,245),(225,255),(244,255),(255,254)],[(0,0),(16,2),(32,18),(64,59),(92,116),(128,182),"
                + "(167,211),(192,227),(224,240),(244,247),(255,252)],[(0,48),(16,50),(62,77),(92,110),(128,144),"
                + "(140,153),(167,180),(192,192),(224,217),(244,225),(255,225)])",
        ].map { "filters:" + $0 }
        return ["meta"] + trims + ["10x10:100x100"] + fitIns + sizes + ["left", "right", "center"]
            + ["top", "bottom", "middle", "smart"] + filters
    }()
    static let images = [
        "gradient.jpg", "cmyk.jpg", "rgba.png", "grayscale.jpg", "16bit.png", "thumbor-exif.png", "gradient.webp",
        "gradient.gif", "animated.gif",
    ]
    /// Not built yet: thumbor's `gifv()` (GIF to video).
    static let notYet: Set<String> = ["filters:gifv()", "filters:gifv(webm)", "filters:gifv(mp4)"]

    func testEveryURLOfThumborsSingleDatasetAnswers() async throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("thumbor/integration-images")
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        for name in Self.images + ["rgba-interlaced.png"] {
            let bytes = try Data(contentsOf: folder.appendingPathComponent(name))
            origin.route("/\(name)", .init(body: Array(bytes)))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = ImageServiceConfiguration()
        configuration.allowsUnsafe = true
        configuration.allowedNetworks = ["127.0.0.1/32"]
        configuration.cacheDirectory = directory
        let service = try ImageService(configuration: configuration)
        let host = "127.0.0.1:\(origin.port)"

        var answered = 0, failures: [String] = []
        for option in Self.options {
            // thumbor's matrix runs on its file loader: bare names, here on the loopback origin.
            let spelled = option.replacingOccurrences(of: "(rgba", with: "(\(host)/rgba")
            for image in Self.images {
                let path = "/unsafe/\(spelled)/\(host)/\(image)"
                let response = await service.handle(method: "GET", path: path, headers: [:])
                let expected = Self.notYet.contains(option) ? 400 : 200
                if response.status != expected {
                    failures.append(
                        "\(response.status) \(path): \(String(decoding: response.body.prefix(200), as: UTF8.self))")
                } else if expected == 200 {
                    answered += 1
                    if option != "meta" {
                        XCTAssertNoThrow(try ImageCodersManager.shared.decode(response.body), path)
                    }
                }
            }
        }
        XCTAssertEqual(failures, [], "\(failures.count) of \(Self.options.count * Self.images.count)")
        XCTAssertEqual(answered, (Self.options.count - Self.notYet.count) * Self.images.count)
        print("thumbor matrix: \(answered) of \(Self.options.count * Self.images.count) URLs answer 200")
    }
}
