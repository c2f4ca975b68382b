import Foundation
import ImageKit
import NIOHTTP1
import XCTest

@testable import ImageKitServer

/// The image service's HTTP semantics end to end, without an HTTP framework in front: real curl
/// fetching sources from the in-process origin on 127.0.0.1 (allowed by `allowedNetworks`),
/// statuses, JSON errors, signatures, negotiation, ETag/304, caching headers, joins.
final class ImageServiceTests: XCTestCase {
    var origin: TestHTTPServer!
    var directory: URL!
    static let jpeg: [UInt8] = Array(
        try! ImageCodersManager.shared.encode(
            DecodedImage(
                frames: [
                    ImageFrame(
                        bitmap: {
                            let buffer = try! PixelBuffer(width: 640, height: 480)
                            for y in 0..<480 {
                                let row = buffer.row(y)
                                for x in 0..<640 {
                                    row[x * 4] = UInt8(x % 256); row[x * 4 + 1] = UInt8(y % 256); row[x * 4 + 2] = 90;
                                    row[x * 4 + 3] = 255
                                }
                            }
                            return buffer.freeze(isOpaque: true)
                        }())
                ], format: .jpeg), as: .jpeg, options: .init(quality: 0.9)))

    override func setUpWithError() throws {
        origin = try TestHTTPServer()
        origin.route("/a.jpg", .init(headers: [("Content-Type", "image/jpeg")], body: Self.jpeg))
        origin.route("/slow.jpg", .init(body: Self.jpeg, chunkSize: 20_000, delay: .milliseconds(30)))
        origin.route("/html", .init(headers: [("Content-Type", "text/html")], body: Array("<html>hello</html>".utf8)))
        origin.route("/down.jpg", .init(status: .internalServerError))
        // A PNG header that declares 100000×100000 pixels.
        var bomb: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 1, 0x86, 0xA0, 0, 1,
            0x86, 0xA0, 8, 6, 0, 0, 0,
        ]
        bomb += [0, 0, 0, 0] + Array(repeating: 0, count: 64)
        origin.route("/bomb.png", .init(body: bomb))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("service-\(UUID().uuidString)")
    }

    override func tearDown() {
        origin.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func makeService(_ adjust: (inout ImageServiceConfiguration) -> Void = { _ in }) throws -> ImageService {
        try ImageService.forTests(cacheDirectory: directory, adjust)
    }

    var host: String { "127.0.0.1:\(origin.port)" }

    func json(_ response: ImageServiceResponse) -> [String: String] {
        (try? JSONSerialization.jsonObject(with: response.body) as? [String: String]) ?? [:]
    }

    func testAThumbnailWithCachingHeadersAnETagAndAResultCache() async throws {
        let service = try makeService()
        let path = "/unsafe/fit-in/256x256/\(host)/a.jpg"
        let response = await service.handle(method: "GET", path: path, headers: [:])
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        XCTAssertEqual(response.header("Content-Type"), "image/jpeg")
        XCTAssertEqual(response.header("Content-Length"), String(response.body.count))
        XCTAssertEqual(response.header("Cache-Control"), "public, max-age=31536000")
        XCTAssertEqual(response.header("Vary"), "Accept")
        let image = try ImageCodersManager.shared.decode(response.body)
        XCTAssertEqual("\(image.width)x\(image.height)", "256x192")
        let etag = try XCTUnwrap(response.header("ETag"))

        let again = await service.handle(method: "GET", path: path, headers: [:])
        XCTAssertEqual(again.body, response.body)
        XCTAssertEqual(again.header("ETag"), etag, "deterministic")
        XCTAssertEqual(origin.requests(to: "/a.jpg"), 1, "the source is cached")

        let notModified = await service.handle(method: "GET", path: path, headers: ["If-None-Match": etag])
        XCTAssertEqual(notModified.status, 304)
        XCTAssertTrue(notModified.body.isEmpty)
        let head = await service.handle(method: "HEAD", path: path, headers: [:])
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)
        XCTAssertEqual(head.header("Content-Length"), String(response.body.count))

        // The same image in imgproxy's grammar, with defaults spelled out (a result of its own: the
        // dialects' rules are part of the key).
        let imgproxy = await service.handle(
            method: "GET", path: "/_/rs:fit:256:256/q:80/plain/http://\(host)/a.jpg", headers: [:])
        XCTAssertEqual(imgproxy.status, 200)
        XCTAssertEqual(try ImageCodersManager.shared.decode(imgproxy.body).width, 256)
    }

    func testNegotiationAndFilenames() async throws {
        let service = try makeService()
        let webp = await service.handle(
            method: "GET", path: "/unsafe/200x0/\(host)/a.jpg", headers: ["Accept": "image/avif,image/webp,*/*"])
        XCTAssertEqual(webp.header("Content-Type"), "image/webp", "auto WebP on, auto AVIF off by default")
        XCTAssertEqual(ImageSignature(webp.body).format, .webp)
        let plain = await service.handle(
            method: "GET", path: "/unsafe/200x0/\(host)/a.jpg", headers: ["Accept": "image/*"])
        XCTAssertEqual(plain.header("Content-Type"), "image/jpeg")
        XCTAssertNotEqual(plain.header("ETag"), webp.header("ETag"))
        let asked = await service.handle(
            method: "GET", path: "/unsafe/200x0/filters:format(png)/\(host)/a.jpg", headers: ["Accept": "image/webp"])
        XCTAssertEqual(asked.header("Content-Type"), "image/png")
        XCTAssertNil(asked.header("Vary"), "an explicit format does not depend on Accept")
        let attachment = await service.handle(
            method: "GET", path: "/_/w:50/fn:cat/att:1/plain/http://\(host)/a.jpg", headers: [:])
        XCTAssertEqual(attachment.header("Content-Disposition"), "attachment; filename=\"cat.jpg\"")
        let shortLived = await service.handle(
            method: "GET", path: "/unsafe/filters:max_age(60)/\(host)/a.jpg", headers: [:])
        XCTAssertEqual(shortLived.header("Cache-Control"), "public, max-age=60")
    }

    /// imgproxy's grammar: an animated GIF with no format asked answers an animated WebP when the
    /// client accepts it (`Vary: Accept`), an animated AVIF when asked (`f:avif`, `@avif`) or
    /// accepted with auto AVIF on, a still JPEG when JPEG is asked; every frame and duration kept.
    /// thumbor's grammar keeps the GIF whatever is asked or accepted.
    func testAnimatedGIFsBecomeAnimatedWebPOrAVIFThroughImgproxysGrammar() async throws {
        let frames = (0..<6).map { index -> ImageFrame in
            let buffer = try! PixelBuffer(width: 96, height: 64)
            for y in 0..<64 {
                let row = buffer.row(y)
                for x in 0..<96 {
                    let lit = (x / 16) == index
                    row[x * 4] = lit ? 250 : 20; row[x * 4 + 1] = UInt8(y * 3); row[x * 4 + 2] = lit ? 30 : 200
                    row[x * 4 + 3] = 255
                }
            }
            return ImageFrame(bitmap: buffer.freeze(isOpaque: true), duration: index == 0 ? 0.5 : 0.1)
        }
        let gif = try ImageCodersManager.shared.encode(
            DecodedImage(frames: frames, loopCount: 0, format: .gif), as: .gif, options: .init())
        origin.route("/anim.gif", .init(headers: [("Content-Type", "image/gif")], body: Array(gif)))
        let service = try makeService { $0.autoAVIF = false }
        let source = "plain/http://\(host)/anim.gif"

        func check(_ response: ImageServiceResponse, _ format: ImageFormat, frames count: Int, _ what: String) throws {
            XCTAssertEqual(response.status, 200, "\(what): \(String(decoding: response.body, as: UTF8.self))")
            XCTAssertEqual(ImageSignature(response.body).format, format, what)
            let image = try ImageCodersManager.shared.decode(response.body)
            XCTAssertEqual(image.frameCount, count, what)
            XCTAssertEqual("\(image.width)x\(image.height)", "48x32", what)
            if count == 6 {
                XCTAssertEqual(image.frames.map(\.duration), [0.5, 0.1, 0.1, 0.1, 0.1, 0.1], what)
                // The lit column moves: frame 3's is at x 24…31 of 48.
                XCTAssertGreaterThan(image.frames[3].bitmap[27, 16].r, 150, what)
                XCTAssertLessThan(image.frames[3].bitmap[5, 16].r, 100, what)
            }
        }
        let webp = await service.handle(
            method: "GET", path: "/_/rs:fit:48:48/\(source)", headers: ["Accept": "image/webp,*/*"])
        try check(webp, .webp, frames: 6, "accepts WebP")
        XCTAssertEqual(webp.header("Vary"), "Accept")
        XCTAssertLessThan(webp.body.count, gif.count)
        let plain = await service.handle(method: "GET", path: "/_/rs:fit:48:48/\(source)", headers: ["Accept": "*/*"])
        try check(plain, .gif, frames: 6, "accepts no WebP")
        XCTAssertEqual(plain.header("Vary"), "Accept", "the bytes depend on Accept")
        // A build without the AVIF trait answers an asked AVIF with 415.
        let writesAVIF = ImageFormat.avif.isCodecSupported
        for path in ["/_/rs:fit:48:48/f:avif/\(source)", "/_/rs:fit:48:48/\(source)@avif"] {
            let avif = await service.handle(method: "GET", path: path, headers: ["Accept": "image/webp"])
            guard writesAVIF else {
                XCTAssertEqual(avif.status, 415, path)
                continue
            }
            try check(avif, .avif, frames: 6, path)
            XCTAssertEqual(avif.header("Content-Type"), "image/avif", path)
            XCTAssertNil(avif.header("Vary"), "\(path): the format is asked")
        }
        let jpeg = await service.handle(method: "GET", path: "/_/rs:fit:48:48/\(source)@jpg", headers: [:])
        try check(jpeg, .jpeg, frames: 1, "JPEG asked: the first frame")
        // The first frame's lit column (x 0…7 of 48), not another frame's.
        let still = try ImageCodersManager.shared.decode(jpeg.body).bitmap
        XCTAssertGreaterThan(still[3, 16].r, 150)
        XCTAssertLessThan(still[27, 16].r, 100)

        let avifBody = await service.handle(method: "GET", path: "/_/rs:fit:48:48/f:avif/\(source)", headers: [:]).body
        try readBackWithTheLibrariesOwnTools(webp: webp.body, avif: writesAVIF ? avifBody : nil)

        let autoAVIF = try makeService { $0.autoAVIF = true }
        let accepted = await autoAVIF.handle(
            method: "GET", path: "/_/rs:fit:48:48/\(source)", headers: ["Accept": "image/avif,image/webp"])
        try check(accepted, writesAVIF ? .avif : .webp, frames: 6, "accepts AVIF, auto AVIF on")

        for (path, accept) in [
            ("/unsafe/48x32/\(host)/anim.gif", "image/avif,image/webp"),
            ("/unsafe/48x32/filters:format(webp)/\(host)/anim.gif", "*/*"),
        ] {
            let thumbor = await autoAVIF.handle(method: "GET", path: path, headers: ["Accept": accept])
            try check(thumbor, .gif, frames: 6, "thumbor: \(path)")
            XCTAssertNil(thumbor.header("Vary"), path)
        }
    }

    /// A vector source is drawn at the size the answer needs: imgproxy enlarges vectors without
    /// `enlarge` (its `calcScale` exempts them), thumbor keeps its rules (`fit-in` does not
    /// upscale, a plain size does); in both the edges stay sharp (drawn, not resampled).
    func testVectorSourcesAreDrawnAtTheSizeAsked() async throws {
        guard ImageFormat.svg.isDecodingSupported else { throw XCTSkip("built without the SVG trait") }
        let svg =
            #"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="150">"#
            + ##"<rect width="100" height="150" fill="#f00"/><rect x="100" width="100" height="150" fill="#00f"/></svg>"##
        origin.route("/v.svg", .init(headers: [("Content-Type", "image/svg+xml")], body: Array(svg.utf8)))
        let service = try makeService()
        for (path, size) in [
            ("/_/rs:fit:256:256/f:png/plain/http://\(host)/v.svg", "256x192"),
            ("/_/rs:fit:100:100/f:png/plain/http://\(host)/v.svg", "100x75"),
            ("/unsafe/fit-in/256x256/filters:format(png)/\(host)/v.svg", "200x150"),
            ("/unsafe/400x300/filters:format(png)/\(host)/v.svg", "400x300"),
        ] {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(response.status, 200, "\(path): \(String(decoding: response.body, as: UTF8.self))")
            let bitmap = try ImageCodersManager.shared.decode(response.body).bitmap
            XCTAssertEqual("\(bitmap.width)x\(bitmap.height)", size, path)
            let middle = bitmap.width / 2, row = bitmap.height / 2
            XCTAssertTrue(bitmap[middle - 1, row] == (255, 0, 0, 255), "\(path): \(bitmap[middle - 1, row])")
            XCTAssertTrue(bitmap[middle, row] == (0, 0, 255, 255), "\(path): \(bitmap[middle, row])")
        }
    }

    /// libwebp's `webpmux` lists the animation and `dwebp` decodes each of its frames; libavif's
    /// `avifdec --info` decodes every frame of the sequence (`make deps` installs both).
    private func readBackWithTheLibrariesOwnTools(webp: Data, avif: Data?) throws {
        func run(_ tool: String, _ arguments: [String]) throws -> (Int32, String) {
            guard
                let path = ["/usr/bin/\(tool)", "/usr/local/bin/\(tool)"].first(
                    where: FileManager.default.isExecutableFile)
            else {
                XCTFail("\(tool) is needed (make deps installs the webp and libavif-bin packages)")
                return (-1, "")
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }
        let folder = directory.appendingPathComponent("tools")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let webpFile = folder.appendingPathComponent("anim.webp").path,
            avifFile = folder.appendingPathComponent("anim.avif").path
        try webp.write(to: URL(fileURLWithPath: webpFile))
        try avif?.write(to: URL(fileURLWithPath: avifFile))

        let (status, info) = try run("webpmux", ["-info", webpFile])
        XCTAssertEqual(status, 0, info)
        XCTAssertTrue(info.contains("Number of frames: 6"), info)
        XCTAssertTrue(info.contains("Loop Count : 0"), info)
        for frame in 1...6 {
            let piece = folder.appendingPathComponent("frame\(frame).webp").path
            XCTAssertEqual(try run("webpmux", ["-get", "frame", "\(frame)", webpFile, "-o", piece]).0, 0)
            let decoded = try run("dwebp", [piece, "-o", piece + ".png"])
            XCTAssertEqual(decoded.0, 0, "frame \(frame): \(decoded.1)")
        }
        guard avif != nil else { return }
        let (avifStatus, avifInfo) = try run("avifdec", ["--info", avifFile])
        XCTAssertEqual(avifStatus, 0, avifInfo)
        XCTAssertTrue(avifInfo.contains("6 frames"), avifInfo)
        XCTAssertTrue(avifInfo.contains("Decoded frame [5]"), avifInfo)
        XCTAssertTrue(avifInfo.contains("[duration 0.50 (500 timescales)]"), avifInfo)
    }

    func testMetaAndInfoAnswerFromTheHeader() async throws {
        let service = try makeService()
        for (path, target) in [
            ("/unsafe/meta/fit-in/256x256/\(host)/a.jpg", [256, 192]),
            ("/info/_/rs:fill:100:100/plain/http://\(host)/a.jpg", [100, 100]),
        ] {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(response.status, 200, path)
            XCTAssertEqual(response.header("Content-Type"), "application/json")
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: response.body) as? [String: Any], path)
            let source = try XCTUnwrap(object["source"] as? [String: Any])
            XCTAssertEqual(source["width"] as? Int, 640)
            XCTAssertEqual(source["height"] as? Int, 480)
            XCTAssertEqual(source["format"] as? String, "jpeg")
            XCTAssertEqual(source["frameCount"] as? Int, 1)
            let answer = try XCTUnwrap(object["target"] as? [String: Int])
            XCTAssertEqual([answer["width"] ?? 0, answer["height"] ?? 0], target, path)
        }
    }

    func testSignaturesAndUnsignedURLs() async throws {
        let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
        let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
        let service = try makeService {
            $0.allowsUnsafe = false
            $0.thumborKeys = ["new-key", "old-key"]
            $0.imgproxyKeys = [(key: key, salt: salt)]
        }
        let thumborPath = "fit-in/100x100/\(host)/a.jpg"
        let signed = await service.handle(
            method: "GET", path: "/" + ThumborSigner(keys: ["old-key"]).sign(thumborPath) + "/" + thumborPath,
            headers: [:])
        XCTAssertEqual(signed.status, 200)
        let wrong = await service.handle(
            method: "GET", path: "/" + ThumborSigner(keys: ["other"]).sign(thumborPath) + "/" + thumborPath,
            headers: [:])
        XCTAssertEqual(wrong.status, 403)
        XCTAssertEqual(json(wrong)["error"], "invalidSignature")
        XCTAssertEqual(wrong.header("Content-Type"), "application/json")
        let unsafe = await service.handle(method: "GET", path: "/unsafe/" + thumborPath, headers: [:])
        XCTAssertEqual(unsafe.status, 403)
        XCTAssertEqual(json(unsafe)["error"], "unsignedURL")
        let imgproxyPath = "/rs:fit:100:100/plain/http://\(host)/a.jpg"
        let imgproxy = await service.handle(
            method: "GET",
            path: "/" + (try ImgproxySigner(pairs: [(key: key, salt: salt)])).sign(imgproxyPath) + imgproxyPath,
            headers: [:])
        XCTAssertEqual(imgproxy.status, 200)
        let tampered = await service.handle(
            method: "GET",
            path: "/" + (try ImgproxySigner(pairs: [(key: key, salt: salt)])).sign(imgproxyPath)
                + imgproxyPath.replacingOccurrences(of: "100", with: "999"), headers: [:])
        XCTAssertEqual(tampered.status, 403)
        XCTAssertThrowsError(
            try ImageService(configuration: ImageServiceConfiguration()), "no key and no --allow-unsafe")
    }

    func testEveryFailureHasItsStatusAndAJSONBody() async throws {
        XCTAssertGreaterThan(Self.jpeg.count, 4_000)
        let service = try makeService {
            $0.maxSourceBytes = 4_000
            $0.allowedSources = ["127.0.0.1", "*.example.com"]
        }
        let forbidden = try TestHTTPServer(host: "127.0.0.2")
        defer { forbidden.stop() }
        forbidden.route("/a.jpg", .init(body: Self.jpeg))
        let cases: [(String, Int, String)] = [
            ("/unsafe/100x100/\(host)/missing.jpg", 404, "sourceNotFound"),
            ("/unsafe/100x100/\(host)/down.jpg", 502, "originFailed"),
            ("/unsafe/100x100/\(host)/a.jpg", 413, "sourceTooLarge"),
            ("/unsafe/100x100/\(host)/html", 415, "notAnImage"),
            ("/unsafe/100x100/\(host)/bomb.png", 422, "tooManyPixels"),
            ("/unsafe/100x100/other.test/a.jpg", 403, "sourceNotAllowed"),
            ("/unsafe/filters:sepia()/\(host)/a.jpg", 400, "unknownFilter"),
            ("/nonsense/a.jpg", 400, "malformedURL"),
            ("/_/exp:1/plain/http://\(host)/a.jpg", 404, "expired"),
            // A scheme no loader serves (s3 and local are not configured here).
            ("/unsafe/300x200/file:///etc/passwd", 400, "unsupportedScheme"),
            ("/unsafe/300x200/ftp://example.com/a.jpg", 400, "unsupportedScheme"),
            ("/_/w:10/plain/file:///etc/passwd", 400, "unsupportedScheme"),
            ("/unsafe/100x0/s3://photos/cat.jpg", 400, "unsupportedScheme"),
            ("/unsafe/100x0/local:///cat.jpg", 400, "unsupportedScheme"),
            ("/unsafe/100x0/http:/other.test/a.jpg", 403, "sourceNotAllowed"),
        ]
        for (path, status, code) in cases {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(response.status.code, status, path)
            XCTAssertEqual(json(response)["error"], code, path)
            XCTAssertFalse(
                String(decoding: response.body, as: UTF8.self).contains(directory.path), "no local path leaks")
            XCTAssertEqual(response.header("Cache-Control"), status == 404 ? "public, max-age=60" : "no-cache", path)
        }
        let post = await service.handle(method: "POST", path: "/unsafe/\(host)/a.jpg", headers: [:])
        XCTAssertEqual(post.status, 405)
    }

    func testPrivateAddressesAreRefusedUnlessListed() async throws {
        let forbidden = try TestHTTPServer(host: "127.0.0.2")
        defer { forbidden.stop() }
        forbidden.route("/a.jpg", .init(body: Self.jpeg))
        origin.route("/hop") { _ in
            .init(status: .found, headers: [("Location", "http://127.0.0.2:\(forbidden.port)/a.jpg")])
        }
        let service = try makeService()
        for path in [
            "/unsafe/100x100/127.0.0.2:\(forbidden.port)/a.jpg", "/unsafe/100x100/\(host)/hop",
            "/_/w:10/plain/http://2130706434:\(forbidden.port)/a.jpg",
        ] {
            let response = await service.handle(method: "GET", path: path, headers: [:])
            XCTAssertEqual(response.status, 403, path)
            XCTAssertEqual(json(response)["error"], "addressNotAllowed", path)
        }
        XCTAssertEqual(forbidden.connectionCount, 0)
        let allowed = try makeService { $0.allowedNetworks = ["127.0.0.0/8"] }
        let response = await allowed.handle(
            method: "GET", path: "/unsafe/100x100/127.0.0.2:\(forbidden.port)/a.jpg", headers: [:])
        XCTAssertEqual(response.status, 200)
    }

    func testAWatermarkIsFetchedUnderTheSourceRules() async throws {
        origin.route("/mark.png", .init(body: Array(try WatermarkTestsMark.png)))
        let forbidden = try TestHTTPServer(host: "127.0.0.2")
        defer { forbidden.stop() }
        forbidden.route("/mark.png", .init(body: Array(try WatermarkTestsMark.png)))
        let service = try makeService()
        let response = await service.handle(
            method: "GET",
            path: "/unsafe/fit-in/200x200/filters:watermark(\(host)/mark.png,0,0,0):format(png)/\(host)/a.jpg",
            headers: [:])
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        let bitmap = try ImageCodersManager.shared.decode(response.body).frames[0].bitmap
        XCTAssertGreaterThan(bitmap[2, 2].r, 200)
        XCTAssertLessThan(bitmap[2, 2].g, 50)
        let refused = await service.handle(
            method: "GET",
            path: "/unsafe/fit-in/200x200/filters:watermark(127.0.0.2:\(forbidden.port)/mark.png,0,0,0)/\(host)/a.jpg",
            headers: [:])
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(json(refused)["error"], "addressNotAllowed")
        XCTAssertEqual(forbidden.connectionCount, 0)
    }

    /// A request takes its place in the worker pool before it fetches its source: when every
    /// place is taken it is answered 503 without the origin being asked for bytes it would not
    /// process, while a request for a result already being made joins that work.
    func testAFullPoolRefusesARequestBeforeItsSourceIsFetched() async throws {
        origin.route(
            "/stalled.jpg", .init(body: Self.jpeg, chunkSize: max(1, Self.jpeg.count / 6), delay: .milliseconds(150)))
        let service = try makeService {
            $0.workers = 1; $0.queueLimit = 0
        }
        let path = "/unsafe/64x64/\(host)/stalled.jpg"
        let first = Task { await service.handle(method: "GET", path: path, headers: [:]) }
        while origin.requests(to: "/stalled.jpg") == 0 { try await Task.sleep(for: .milliseconds(2)) }

        let refused = await service.handle(method: "GET", path: "/unsafe/64x64/\(host)/a.jpg", headers: [:])
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.header("Retry-After"), "1")
        XCTAssertEqual(json(refused)["error"], "busy")
        XCTAssertEqual(origin.requests(to: "/a.jpg"), 0, "refused before the origin was asked")

        let joined = await service.handle(method: "GET", path: path, headers: [:])
        let firstResponse = await first.value
        XCTAssertEqual(joined.status, 200, "the same result joins the work in flight")
        XCTAssertEqual(firstResponse.status, 200)
        XCTAssertEqual(origin.requests(to: "/stalled.jpg"), 1)
        XCTAssertEqual(service.pool.reservedCount, 0)
        let later = await service.handle(method: "GET", path: "/unsafe/64x64/\(host)/a.jpg", headers: [:])
        XCTAssertEqual(later.status, 200, "the place is free again")
    }

    /// The default queue absorbs a page of thumbnails on a cold cache: two workers, 48 distinct
    /// results asked at once of a slow origin, none refused (10 × workers refused two of 24).
    func testTheDefaultQueueTakesAPageOfThumbnailsAtOnce() async throws {
        origin.route(
            "/page.jpg", .init(body: Self.jpeg, chunkSize: max(1, Self.jpeg.count / 4), delay: .milliseconds(20)))
        let service = try makeService { $0.workers = 2 }
        XCTAssertEqual(service.configuration.queueLimit, ImageServiceConfiguration.defaultQueueLimit)
        let host = self.host
        let statuses = await withTaskGroup(of: Int.self) { group in
            for width in 0..<48 {
                group.addTask {
                    await service.handle(method: "GET", path: "/unsafe/\(64 + width)x0/\(host)/page.jpg", headers: [:])
                        .status.code
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(statuses, Array(repeating: 200, count: 48))
        XCTAssertEqual(service.pool.reservedCount, 0)
    }

    /// A revalidation (`If-None-Match`) whose result has expired needs the source but no worker
    /// when the result has not changed: a full pool does not refuse it.
    func testARevalidationIsAnsweredWhileThePoolIsFull() async throws {
        origin.route(
            "/stalled.jpg", .init(body: Self.jpeg, chunkSize: max(1, Self.jpeg.count / 6), delay: .milliseconds(150)))
        let service = try makeService {
            $0.workers = 1; $0.queueLimit = 0; $0.resultTimeToLive = 0
        }
        let path = "/unsafe/64x64/\(host)/a.jpg"
        let made = await service.handle(method: "GET", path: path, headers: [:])
        let etag = try XCTUnwrap(made.header("ETag"))
        let stalled = "/unsafe/64x64/\(host)/stalled.jpg"
        let holder = Task { await service.handle(method: "GET", path: stalled, headers: [:]) }
        while origin.requests(to: "/stalled.jpg") == 0 { try await Task.sleep(for: .milliseconds(2)) }

        let revalidated = await service.handle(method: "GET", path: path, headers: ["If-None-Match": etag])
        XCTAssertEqual(revalidated.status, 304, String(decoding: revalidated.body, as: UTF8.self))
        let refused = await service.handle(method: "GET", path: path, headers: [:])
        XCTAssertEqual(refused.status, 503, "an unconditional request takes a place before its source")
        let held = await holder.value
        XCTAssertEqual(held.status, 200)
    }

    func testIdenticalRequestsAreJoinedAndAFullQueueAnswers503() async throws {
        let service = try makeService {
            $0.workers = 1; $0.queueLimit = 0
        }
        let path = "/unsafe/fit-in/128x128/\(host)/slow.jpg"
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { await service.handle(method: "GET", path: path, headers: [:]).status.code }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(statuses, Array(repeating: 200, count: 8), "identical requests share one job, not eight workers")
        XCTAssertEqual(origin.requests(to: "/slow.jpg"), 1)

        // Distinct results with one worker and no queue: some are refused with 503 + Retry-After.
        let host = self.host
        let busy = await withTaskGroup(of: ImageServiceResponse.self) { group in
            for size in 20..<40 {
                group.addTask {
                    await service.handle(method: "GET", path: "/unsafe/\(size)x\(size)/\(host)/a.jpg", headers: [:])
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertTrue(busy.allSatisfy { $0.status == 200 || $0.status == 503 })
        for refused in busy where refused.status == 503 {
            XCTAssertEqual(refused.header("Retry-After"), "1")
            XCTAssertEqual(json(refused)["error"], "busy")
        }
    }
}

/// A 16×16 opaque red PNG.
enum WatermarkTestsMark {
    static var png: Data {
        get throws {
            let buffer = try PixelBuffer(width: 16, height: 16)
            for y in 0..<16 {
                let row = buffer.row(y)
                for x in 0..<16 { row[x * 4] = 255; row[x * 4 + 1] = 0; row[x * 4 + 2] = 0; row[x * 4 + 3] = 255 }
            }
            return try ImageCodersManager.shared.encode(
                DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .png),
                as: .png, options: .init())
        }
    }
}
