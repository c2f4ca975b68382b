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
    /// Forms not built yet (none).
    static let notYet: Set<String> = []

    /// `gifv()` turns an animated GIF into video (as thumbor does with its gifv optimizer or
    /// thumbor-video-engine; its default PIL engine, which the live thumbor runs, leaves a GIF).
    static func writesVideo(_ option: String, _ image: String) -> Bool {
        option.hasPrefix("filters:gifv(") && image == "animated.gif" && VideoWriter.isSupported
    }

    /// Whether this build writes the format the option asks for (AVIF and HEIC are traits).
    static func writesAskedFormat(_ option: String) -> Bool {
        switch option {
        case "filters:format(avif)": ImageFormat.avif.isCodecSupported
        case "filters:format(heic)", "filters:format(heif)": ImageFormat.heic.isCodecSupported
        default: true
        }
    }

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
                // A GIF skips its filters, format() included: it needs no trait.
                let writes = Self.writesAskedFormat(option) || image.hasSuffix(".gif")
                let expected = Self.notYet.contains(option) ? 400 : writes ? 200 : 415
                if response.status.code != expected {
                    failures.append(
                        "\(response.status.code) \(path): \(String(decoding: response.body.prefix(200), as: UTF8.self))"
                    )
                } else if expected == 200 {
                    answered += 1
                    if Self.writesVideo(option, image) {
                        XCTAssertNoThrow(try VideoFrameSource(data: response.body).frame(at: 0), path)
                    } else if option != "meta" {
                        XCTAssertNoThrow(try ImageCodersManager.shared.decode(response.body), path)
                    }
                }
            }
        }
        XCTAssertEqual(failures, [], "\(failures.count) of \(Self.options.count * Self.images.count)")
        let answering = Self.options.filter { !Self.notYet.contains($0) }.reduce(0) { total, option in
            total + Self.images.filter { Self.writesAskedFormat(option) || $0.hasSuffix(".gif") }.count
        }
        XCTAssertEqual(answered, answering)
        print("thumbor matrix: \(answered) of \(Self.options.count * Self.images.count) URLs answer 200")
    }

    /// Each URL of the matrix that a live thumbor 7.8 (the one `make test` starts, on the same
    /// images) answers with an image: the service's answer has the same size and format.
    func testSizesAndFormatsEqualALiveThumbors() async throws {
        let sizes = try XCTUnwrap(
            ProcessInfo.processInfo.environment["IMAGEKIT_THUMBOR_SIZES"],
            "IMAGEKIT_THUMBOR_SIZES is not set: run the tests with `make test`, which asks thumbor first")
        let matrix = String(sizes.dropLast(".jsonl".count)) + "-matrix.jsonl"
        let rows = try String(contentsOfFile: matrix, encoding: .utf8).split(separator: "\n").compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        XCTAssertEqual(rows.count, Self.options.count * Self.images.count)
        let (service, host, stop) = try await Self.serviceAndOrigin()
        defer { stop() }
        var compared = 0, differences: [String] = []
        for row in rows {
            guard let option = row["option"] as? String, let image = row["image"] as? String,
                let width = row["width"] as? Int, let height = row["height"] as? Int,
                let format = row["format"] as? String
            else { continue }
            let spelled = option.replacingOccurrences(of: "(rgba", with: "(\(host)/rgba")
            let response = await service.handle(
                method: "GET", path: "/unsafe/\(spelled)/\(host)/\(image)", headers: [:])
            guard Self.writesAskedFormat(option) || image.hasSuffix(".gif") else {
                if response.status != 415 { differences.append("\(option) on \(image): \(response.status), not 415") }
                continue  // a build without that format's trait
            }
            if Self.writesVideo(option, image) {
                // thumbor's PIL engine answers the GIF; ImageKit the video its gifv engine would,
                // of the same frames at the same size (sides made even for 4:2:0).
                let video = try? VideoFrameSource(data: response.body)
                if response.status != 200 || video?.info.codedSize != PixelSize(width: width & ~1, height: height & ~1)
                    || format != "gif"
                {
                    differences.append("\(option) on \(image): \(response.status), \(String(describing: video?.info))")
                }
                compared += 1
                continue
            }
            guard response.status == 200, let decoded = try? ImageCodersManager.shared.decode(response.body) else {
                differences.append("\(option) on \(image): status \(response.status)")
                continue
            }
            let ours = ImageSignature(response.body).format
            let formatName = ours == .heic ? "heif" : ours.rawValue
            let sameSize = decoded.width == width && decoded.height == height
            switch option {
            case "filters:format(heic)", "filters:format(heif)":
                // thumbor 7.8's PIL engine writes no HEIF: it ignores format(heic) and answers the
                // source's format. ImageKit writes what is asked.
                // (A GIF skips its filters in both: it stays a GIF.)
                let expected = image.hasSuffix(".gif") ? "gif" : "heif"
                if !sameSize || formatName != expected || format == "heif" {
                    differences.append("\(option) on \(image): \(decoded.width)x\(decoded.height) \(formatName)")
                }
                compared += 1
                continue
            case "filters:frame(rgba.png)":
                // thumbor 7.8's nine-patch C code reads the image mode from the address of a Python
                // object (`(char *)PyUnicode_AsUTF8String(…)`), so its pixel stride and alpha index
                // are arbitrary: for rgba.png, which has no markers, it finds padding 1, 8, 28, 0.
                // ImageKit reads the markers as the nine-patch format defines them: none, no padding.
                if formatName != format { differences.append("\(option) on \(image): format \(formatName)") }
                compared += 1
                continue
            default: break
            }
            if !sameSize || formatName != format {
                differences.append(
                    "\(option) on \(image): thumbor \(width)x\(height) \(format), ImageKit \(decoded.width)x\(decoded.height) \(formatName)"
                )
            }
            compared += 1
        }
        print("thumbor matrix against a live thumbor: \(compared) compared, \(differences.count) differ")
        XCTAssertEqual(differences, [])
        XCTAssertGreaterThan(compared, 500)
    }

    static func serviceAndOrigin() async throws -> (ImageService, String, () -> Void) {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("thumbor/integration-images")
        let origin = try TestHTTPServer()
        for name in images + ["rgba-interlaced.png"] {
            origin.route("/\(name)", .init(body: Array(try Data(contentsOf: folder.appendingPathComponent(name)))))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-\(UUID().uuidString)")
        var configuration = ImageServiceConfiguration()
        configuration.allowsUnsafe = true
        configuration.allowedNetworks = ["127.0.0.1/32"]
        configuration.cacheDirectory = directory
        configuration.autoWebP = false
        let service = try ImageService(configuration: configuration)
        return (
            service, "127.0.0.1:\(origin.port)",
            {
                origin.stop()
                try? FileManager.default.removeItem(at: directory)
            }
        )
    }
}
