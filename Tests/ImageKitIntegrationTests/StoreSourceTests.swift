import Foundation
import XCTest

@testable import ImageKit

/// `s3://` sources (signed with AWS Signature V4 by libcurl, checked by moto's S3 server) and
/// `local://` sources under a root, through `ImageManager` and through `imagekit serve` in both
/// grammars: a private object served, a bucket outside the allow-list refused, a wrong secret
/// refused by the store, a changed object served anew, and no path leaving the local root.
final class StoreSourceTests: XCTestCase {
    static func jpeg(width: Int, height: Int) throws -> Data {
        let buffer = try PixelBuffer(width: width, height: height)
        for y in 0..<height {
            let row = buffer.row(y)
            for x in 0..<width {
                row[x * 4] = UInt8(x % 256); row[x * 4 + 1] = UInt8(y % 256); row[x * 4 + 2] = 90; row[x * 4 + 3] = 255
            }
        }
        let image = DecodedImage(frames: [ImageFrame(bitmap: buffer.freeze(isOpaque: true))], format: .jpeg)
        return try ImageCodersManager.shared.encode(image, as: .jpeg, options: .init(quality: 0.9))
    }

    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-sources-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: local://

    /// The root and a sibling directory outside it: a photo inside, a secret outside, a link
    /// out and a link within.
    func makeLocalRoot() throws -> URL {
        let root = directory.appendingPathComponent("root")
        let outside = directory.appendingPathComponent("outside")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("photos"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Self.jpeg(width: 64, height: 48).write(to: root.appendingPathComponent("photos/cat.jpg"))
        try Self.jpeg(width: 32, height: 32).write(to: outside.appendingPathComponent("secret.jpg"))
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("out.jpg").path, withDestinationPath: outside.path + "/secret.jpg")
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("outdir").path, withDestinationPath: outside.path)
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("within.jpg").path, withDestinationPath: "photos/cat.jpg")
        return root
    }

    /// Every way out of the root is refused as a missing file is.
    static let escapes = [
        "local:///../outside/secret.jpg", "local:///photos/../../outside/secret.jpg",
        "local:///%2e%2e/outside/secret.jpg", "local:///%2E%2E%2Foutside%2Fsecret.jpg", "local:///out.jpg",
        "local:///outdir/secret.jpg", "local:///photos/cat.jpg%00.png", "local:///photos", "local:///",
        "local:///missing.jpg",
    ]

    func testLocalRootLoaderReadsUnderTheRootOnly() async throws {
        let root = try makeLocalRoot()
        let loader = LocalRootLoader(root: root)
        for inside in [
            "local:///photos/cat.jpg", "local:///within.jpg", "local://photos/cat.jpg", "local:///photos//cat.jpg",
        ] {
            let response = try await loader.load(try XCTUnwrap(URL(string: inside)))
            XCTAssertEqual(response.data, try Data(contentsOf: root.appendingPathComponent("photos/cat.jpg")), inside)
            XCTAssertNotNil(response.headers["etag"], inside)
            XCTAssertNotNil(response.headers["last-modified"].flatMap(HTTPDate.parse), inside)
        }
        for escape in Self.escapes {
            let url = try XCTUnwrap(URL(string: escape), escape)
            do {
                _ = try await loader.load(url)
                XCTFail("\(escape) was read")
            } catch {
                XCTAssertEqual(error.code, .invalidStatusCode, escape)
                XCTAssertEqual(error.httpStatusCode, 404, escape)
                XCTAssertFalse(error.message.contains(directory.path), "\(escape): \(error.message)")
            }
        }
        // A file changed in place is a new version.
        let before = try await loader.load(try XCTUnwrap(URL(string: "local:///photos/cat.jpg")))
        try Self.jpeg(width: 80, height: 60).write(to: root.appendingPathComponent("photos/cat.jpg"))
        let after = try await loader.load(try XCTUnwrap(URL(string: "local:///photos/cat.jpg")))
        XCTAssertNotEqual(before.headers["etag"], after.headers["etag"])
    }

    func testImageManagerLoadsLocalURLs() async throws {
        let root = try makeLocalRoot()
        let loaders = ImageLoadersManager()
        loaders.add(LocalRootLoader(root: root))
        let manager = ImageManager(
            cache: ImageCache(memoryCache: MemoryCache(), diskCache: UnavailableDiskCache()), loader: loaders)
        let result = try await manager.loadImage(try XCTUnwrap(URL(string: "local:///photos/cat.jpg")))
        XCTAssertEqual(result.image?.width, 64)
        do {
            _ = try await manager.loadImage(try XCTUnwrap(URL(string: "local:///out.jpg")))
            XCTFail("a link out of the root was read")
        } catch {
            XCTAssertEqual((error as? ImageError)?.httpStatusCode, 404)
        }
    }

    // MARK: Schemes

    /// Each scheme's loader reads a source as a request path carries it (a proxy's merged `//`
    /// restored) and says what its configuration serves; a host outside the downloader's allowed
    /// ones is refused before anything is sent.
    func testSourceLoadersReadTheirSchemesAndSayWhatIsServed() async throws {
        let downloader = ImageDownloader(
            configuration: {
                var configuration = ImageDownloaderConfiguration(retryPolicy: .none)
                configuration.allowedHosts = ["*.example.com", "127.0.0.1"]
                return configuration
            }())
        let s3 = S3Loader(
            access: S3Access(accessKeyID: "AKID", secretAccessKey: "secret", buckets: ["photos"]),
            downloader: downloader)
        let local = LocalRootLoader(root: directory)
        XCTAssertEqual(downloader.schemes, ["http", "https"])
        XCTAssertEqual(
            try downloader.sourceURL("https:/img.example.com/a.jpg").absoluteString, "https://img.example.com/a.jpg")
        XCTAssertEqual(try s3.sourceURL("s3:/photos/a/b.jpg").absoluteString, "s3://photos/a/b.jpg")
        XCTAssertEqual(
            try s3.sourceURL("S3://photos/a.jpg?versionId=v1").absoluteString, "s3://photos/a.jpg?versionId=v1")
        XCTAssertEqual(try local.sourceURL("local:/products/42.jpg").absoluteString, "local:///products/42.jpg")
        XCTAssertEqual(try local.sourceURL("local:///products/42.jpg").absoluteString, "local:///products/42.jpg")
        for (loader, text) in [(s3, "s3://photos/"), (s3, "s3:"), (downloader, "http:///"), (local, "local:")]
            as [(any SourceLoading, String)]
        {
            XCTAssertThrowsError(try loader.sourceURL(text), text) {
                XCTAssertEqual(($0 as? ImageError)?.code, .invalidURL)
            }
        }
        XCTAssertTrue(downloader.allows(try XCTUnwrap(URL(string: "https://example.com/a.jpg"))))
        XCTAssertTrue(downloader.allows(try XCTUnwrap(URL(string: "https://a.b.EXAMPLE.com/a.jpg"))))
        XCTAssertFalse(downloader.allows(try XCTUnwrap(URL(string: "https://example.com.evil.test/a.jpg"))))
        XCTAssertTrue(s3.allows(try XCTUnwrap(URL(string: "s3://photos/a.jpg"))))
        XCTAssertFalse(s3.allows(try XCTUnwrap(URL(string: "s3://other/a.jpg"))))
        XCTAssertFalse(local.cachesSources)
        XCTAssertTrue(s3.cachesSources)
        // Refused before a connection: 127.0.0.2 is not allowed (nothing listens there either).
        let refused = try XCTUnwrap(URL(string: "http://127.0.0.2:9/a.jpg"))
        do {
            _ = try await downloader.load(refused)
            XCTFail("a host outside the allowed ones was loaded")
        } catch {
            XCTAssertEqual(error.code, .invalidURL)
        }
    }

    // MARK: s3://

    func testS3AccessAddressesBucketsAndKeys() throws {
        let aws = S3Access(region: "eu-west-1", accessKeyID: "AKID", secretAccessKey: "secret")
        XCTAssertEqual(
            try aws.httpURL(for: XCTUnwrap(URL(string: "s3://photos/a/b%20c.jpg"))).absoluteString,
            "https://photos.s3.eu-west-1.amazonaws.com/a/b%20c.jpg")
        let minio = S3Access(
            accessKeyID: "AKID", secretAccessKey: "secret", endpoint: URL(string: "http://10.0.0.5:9000/"),
            buckets: ["photos"])
        XCTAssertEqual(
            try minio.httpURL(for: XCTUnwrap(URL(string: "s3://photos/a.jpg"))).absoluteString,
            "http://10.0.0.5:9000/photos/a.jpg")
        var virtualHosted = minio
        virtualHosted.usesPathStyle = false
        XCTAssertEqual(
            try virtualHosted.httpURL(for: XCTUnwrap(URL(string: "s3://photos/a.jpg"))).absoluteString,
            "http://photos.10.0.0.5:9000/a.jpg")
        XCTAssertEqual(
            try minio.httpURL(for: XCTUnwrap(URL(string: "s3://photos/a.jpg?acl&versionId=v1"))).absoluteString,
            "http://10.0.0.5:9000/photos/a.jpg?versionId=v1")
        for refused in [
            "s3://other/a.jpg", "s3://photos/", "s3://Ph_otos/a.jpg", "s3://ab/a.jpg", "http://photos/a.jpg",
            "s3://photos/../other/a.jpg", "s3://photos/%2e%2e/other/a.jpg", "s3://photos/a/./b.jpg",
        ] {
            XCTAssertThrowsError(try minio.httpURL(for: XCTUnwrap(URL(string: refused))), refused) { error in
                XCTAssertEqual((error as? ImageError)?.code, .invalidURL, refused)
            }
        }
        let environment = [
            "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-central-1",
            "IMAGEKIT_SERVE_S3_SECRET_ACCESS_KEY": "own",
        ]
        let access = try XCTUnwrap(S3Access.fromEnvironment(environment, prefix: "IMAGEKIT_SERVE_S3_"))
        XCTAssertEqual(access.region, "eu-central-1")
        XCTAssertEqual(access.secretAccessKey, "own")
        XCTAssertFalse(access.description.contains("own"))
        XCTAssertNil(S3Access.fromEnvironment(["AWS_ACCESS_KEY_ID": "AKID"]))
    }

    func testDownloaderSignsS3RequestsAndTheStoreChecksThem() async throws {
        for moto in try MotoS3Server.all(buckets: ["private-photos", "public-looking"]) {
            defer { moto.stop() }
            try await downloaderSignsS3Requests(moto)
        }
    }

    private func downloaderSignsS3Requests(_ moto: MotoS3Server) async throws {
        let photo = directory.appendingPathComponent("photo.jpg")
        try Self.jpeg(width: 120, height: 90).write(to: photo)
        try moto.put("private-photos", "2024/cat.jpg", file: photo.path)
        try moto.put("public-looking", "cat.jpg", file: photo.path)

        let web = ImageDownloader(configuration: ImageDownloaderConfiguration(timeout: 10, retryPolicy: .none))
        func downloader(_ access: S3Access) -> S3Loader { S3Loader(access: access, downloader: web) }
        let signed = downloader(moto.access(buckets: ["private-photos"]))
        let url = try XCTUnwrap(URL(string: "s3://private-photos/2024/cat.jpg"))
        let response = try await signed.load(url)
        XCTAssertEqual(response.data, try Data(contentsOf: photo))
        XCTAssertEqual(response.url, url)
        XCTAssertNotNil(response.headers["etag"])

        // Through the manager, as an app would.
        let manager = ImageManager(
            cache: ImageCache(memoryCache: MemoryCache(), diskCache: UnavailableDiskCache()), loader: signed)
        let loaded = try await manager.loadImage(url)
        XCTAssertEqual(loaded.image?.width, 120)

        // A missing key is the store's 404; a bucket outside the list is never asked.
        await assertFails(signed, "s3://private-photos/2024/missing.jpg", code: .invalidStatusCode, status: 404)
        await assertFails(signed, "s3://public-looking/cat.jpg", code: .invalidURL, status: nil)
        // A wrong secret: the store refuses the signature.
        await assertFails(
            downloader(moto.access(secret: "wrong-secret")), "s3://private-photos/2024/cat.jpg",
            code: .invalidStatusCode, status: 403)
        // Without S3 access, s3 URLs are not loaded at all.
        XCTAssertFalse(ImageDownloader().canLoad(url))
        await assertFails(web, url.absoluteString, code: .invalidURL, status: nil)

        // Two accesses to one object at once never share a transfer: the wrong secret still fails
        // while the right one loads.
        async let right = try? signed.load(url)
        async let wrong = try? downloader(moto.access(secret: "wrong-secret")).load(url)
        let (rightData, wrongData) = await (right?.data, wrong?.data)
        XCTAssertEqual(rightData, try Data(contentsOf: photo))
        XCTAssertNil(wrongData)
    }

    private func assertFails(
        _ downloader: any ImageLoading, _ text: String, code: ImageError.Code, status: Int?, line: UInt = #line
    ) async {
        do {
            _ = try await downloader.load(URL(string: text)!)
            XCTFail("\(text) loaded", line: line)
        } catch {
            XCTAssertEqual(error.code, code, "\(text): \(error)", line: line)
            XCTAssertEqual(error.httpStatusCode, status, "\(text): \(error)", line: line)
            XCTAssertFalse(error.message.contains("wrong-secret"), line: line)
        }
    }
}

#if Serve
extension StoreSourceTests {
    func testServeReadsS3SourcesInBothGrammars() throws {
        for moto in try MotoS3Server.all(buckets: ["private-photos", "public-looking"]) {
            defer { moto.stop() }
            try serveReadsS3Sources(moto)
        }
    }

    private func serveReadsS3Sources(_ moto: MotoS3Server) throws {
        let photo = directory.appendingPathComponent("photo.jpg")
        try Self.jpeg(width: 400, height: 300).write(to: photo)
        try moto.put("private-photos", "2024/cat.jpg", file: photo.path)
        try moto.put("public-looking", "cat.jpg", file: photo.path)
        let credentials = [
            "IMAGEKIT_SERVE_S3_ACCESS_KEY_ID": moto.keyID, "IMAGEKIT_SERVE_S3_SECRET_ACCESS_KEY": moto.secret,
        ]
        let options = [
            "--allow-unsafe", "--s3-bucket", "private-photos", "--s3-endpoint", moto.endpoint.absoluteString,
            "--result-ttl", "0",
        ]
        // The address guard applies to the store: a loopback one is refused until it is allowed.
        let guarded = try ServeProcess(options, environment: credentials)
        let refusedAddress = try guarded.request("/unsafe/100x0/s3://private-photos/2024/cat.jpg")
        guarded.stop()
        XCTAssertEqual(refusedAddress.status, 403)
        XCTAssertEqual(refusedAddress.json["error"], "addressNotAllowed")
        let allowed = options + ["--allow-address", "127.0.0.1/32"]
        let server = try ServeProcess(allowed, environment: credentials)
        defer { server.stop() }
        let base64 = Data("s3://private-photos/2024/cat.jpg".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        for path in [
            "/unsafe/100x0/s3://private-photos/2024/cat.jpg", "/unsafe/100x0/s3:/private-photos/2024/cat.jpg",
            "/insecure/rs:fit:100:100/plain/s3://private-photos/2024/cat.jpg", "/insecure/rs:fit:100:100/\(base64)",
        ] {
            let answer = try server.request(path)
            XCTAssertEqual(answer.status, 200, "\(path): \(answer.json)")
            let image = try ImageCodersManager.shared.decode(Data(answer.body))
            XCTAssertEqual(image.width, 100, path)
            XCTAssertEqual(image.height, 75, path)
        }
        // Not in the allow-list: refused before the store is asked; a missing key: 404.
        let notListed = try server.request("/unsafe/100x0/s3://public-looking/cat.jpg")
        XCTAssertEqual(notListed.status, 403)
        XCTAssertEqual(notListed.json["error"], "sourceNotAllowed")
        XCTAssertEqual(try server.request("/unsafe/100x0/s3://private-photos/2024/missing.jpg").status, 404)
        let noRoot = try server.request("/unsafe/100x0/local:///cat.jpg")
        XCTAssertEqual(noRoot.status, 400)
        XCTAssertEqual(noRoot.json["error"], "unsupportedScheme")

        // The object changes: with the result's time to live over, the new bytes are served.
        try Self.jpeg(width: 200, height: 200).write(to: photo)
        try moto.put("private-photos", "2024/cat.jpg", file: photo.path)
        let changed = try server.request("/unsafe/100x0/s3://private-photos/2024/cat.jpg")
        XCTAssertEqual(changed.status, 200)
        XCTAssertEqual(try ImageCodersManager.shared.decode(Data(changed.body)).height, 100)

        // A wrong secret: the store refuses the signature (502, the store's 403 named).
        var wrong = credentials
        wrong["IMAGEKIT_SERVE_S3_SECRET_ACCESS_KEY"] = "wrong-secret"
        let refused = try ServeProcess(allowed, environment: wrong)
        defer { refused.stop() }
        let answer = try refused.request("/unsafe/100x0/s3://private-photos/2024/cat.jpg")
        XCTAssertEqual(answer.status, 502)
        XCTAssertEqual(answer.json["message"], "the origin answered 403")
        XCTAssertFalse(refused.output.contains("wrong-secret"))
    }

    /// A video is a source like any other: its poster and its sprite sheet from S3 and from a
    /// local root, in both grammars.
    func testServeReadsVideoSourcesFromS3AndLocalRoots() throws {
        try XCTSkipUnless(VideoFrameSource.isSupported, "the Video trait is off")
        let root = directory.appendingPathComponent("videos")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let clip = root.appendingPathComponent("clip.mp4")
        try VideoServiceTests.mp4.write(to: clip)
        for moto in try MotoS3Server.all(buckets: ["videos"]) {
            defer { moto.stop() }
            try moto.put("videos", "2024/clip.mp4", file: clip.path)
            let server = try ServeProcess(
                [
                    "--allow-unsafe", "--s3-bucket", "videos", "--s3-endpoint", moto.endpoint.absoluteString,
                    "--allow-address", "127.0.0.1/32", "--local-root", root.path,
                ],
                environment: [
                    "IMAGEKIT_SERVE_S3_ACCESS_KEY_ID": moto.keyID, "IMAGEKIT_SERVE_S3_SECRET_ACCESS_KEY": moto.secret,
                ])
            defer { server.stop() }
            for source in ["s3://videos/2024/clip.mp4", "local:///clip.mp4"] {
                for (path, size) in [
                    ("/unsafe/160x0/filters:still(2)/\(source)", [160, 120]),
                    ("/insecure/rs:fit:160:160/vts:2/plain/\(source)", [160, 120]),
                    ("/insecure/vts:0/vtt:1:2:2:80:60/plain/\(source)", [160, 120]),
                ] {
                    let answer = try server.request(path)
                    XCTAssertEqual(answer.status, 200, "\(path): \(answer.json)")
                    let image = try ImageCodersManager.shared.decode(Data(answer.body))
                    XCTAssertEqual([image.width, image.height], size, path)
                }
            }
        }
    }

    func testServeReadsLocalSourcesAndNoPathLeavesTheRoot() throws {
        let root = try makeLocalRoot()
        let server = try ServeProcess(["--allow-unsafe", "--local-root", root.path, "--result-ttl", "0"])
        defer { server.stop() }
        for path in ["/unsafe/32x0/local:///photos/cat.jpg", "/insecure/w:32/plain/local:///photos/cat.jpg"] {
            let answer = try server.request(path)
            XCTAssertEqual(answer.status, 200, "\(path): \(answer.json)")
            XCTAssertEqual(try ImageCodersManager.shared.decode(Data(answer.body)).height, 24, path)
        }
        // A URL that names no file at all is malformed.
        XCTAssertEqual(try server.request("/unsafe/32x0/local:///").json["error"], "malformedURL")
        for escape in Self.escapes where escape != "local:///" {
            for path in ["/unsafe/32x0/" + escape, "/insecure/w:32/plain/" + escape] {
                let answer = try server.request(path)
                XCTAssertEqual(answer.status, 404, "\(path): \(answer.json)")
                XCTAssertEqual(answer.json["error"], "sourceNotFound", path)
                XCTAssertFalse(String(decoding: answer.body, as: UTF8.self).contains(directory.path), path)
            }
        }
        // Changed in place: served anew (size and modification time are its version).
        try Self.jpeg(width: 64, height: 64).write(to: root.appendingPathComponent("photos/cat.jpg"))
        let changed = try server.request("/unsafe/32x0/local:///photos/cat.jpg")
        XCTAssertEqual(try ImageCodersManager.shared.decode(Data(changed.body)).height, 32)
        XCTAssertEqual(try server.request("/unsafe/32x0/s3://bucket/cat.jpg").status, 400)
    }
}
#endif
