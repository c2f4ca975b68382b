import Foundation
import ImageKit
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// An S3 store for the tests: moto's standalone server on 127.0.0.1 (Tests/s3/moto_s3.py) with
/// AWS Signature V4 checked on every request after its setup (an IAM user and key that may use
/// S3, and the buckets asked for), or the store `IMAGEKIT_TEST_S3_ENDPOINT` names (``all(buckets:)``).
/// `make test` installs moto into its venv and names that venv's python in `IMAGEKIT_MOTO_PYTHON`.
final class MotoS3Server: @unchecked Sendable {
    // Invariant: `process` and the pipes are used from the test's thread only.
    let endpoint: URL
    let keyID: String
    let secret: String
    let region: String
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var pending = Data()

    /// Starts the server with `buckets`; fails the test when no python with moto is found.
    init(buckets: [String]) throws {
        // make test names the venv's python; a plain `swift test` finds the same venv where make
        // test keeps it, and fails (not skips) without it: the S3 tests are part of the suite.
        let venv = FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".cache/imagekit/thumbor-7.8.0-venv/bin/python").path
        let python = ProcessInfo.processInfo.environment["IMAGEKIT_MOTO_PYTHON"] ?? venv
        guard FileManager.default.isExecutableFile(atPath: python) else {
            XCTFail(
                "no python with moto at \(python): run `make thumbor-venv` (make test does) or set IMAGEKIT_MOTO_PYTHON"
            )
            throw POSIXError(.ENOENT)
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("s3/moto_s3.py")
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path] + buckets
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let first = try Self.line(from: output.fileHandleForReading, buffer: &pending, seconds: 60)
        guard let object = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: String],
            let endpoint = object["endpoint"].flatMap(URL.init(string:)), let key = object["key"],
            let secret = object["secret"], let region = object["region"]
        else {
            process.terminate()
            throw POSIXError(.EPROTO)
        }
        self.endpoint = endpoint
        keyID = key
        self.secret = secret
        self.region = region
        external = nil
    }

    /// Stores the file at `path` as `bucket`/`key` (signed with the server's key).
    func put(_ bucket: String, _ key: String, file path: String) throws {
        if let external {
            try external.put(bucket, key, file: path, keyID: keyID, secret: secret, region: region, endpoint: endpoint)
            return
        }
        try command("put \(bucket) \(key) \(path)")
    }

    /// The stores the tests run against: moto's, and the one `IMAGEKIT_TEST_S3_ENDPOINT` names
    /// (MinIO, for example) with `IMAGEKIT_TEST_S3_ACCESS_KEY_ID`, `IMAGEKIT_TEST_S3_SECRET_ACCESS_KEY`
    /// and optionally `IMAGEKIT_TEST_S3_REGION`: its buckets are created and written with curl's
    /// own `--aws-sigv4`.
    static func all(buckets: [String]) throws -> [MotoS3Server] {
        var stores = [try MotoS3Server(buckets: buckets)]
        let environment = ProcessInfo.processInfo.environment
        if let endpoint = environment["IMAGEKIT_TEST_S3_ENDPOINT"].flatMap(URL.init(string:)),
            let keyID = environment["IMAGEKIT_TEST_S3_ACCESS_KEY_ID"],
            let secret = environment["IMAGEKIT_TEST_S3_SECRET_ACCESS_KEY"]
        {
            let region = environment["IMAGEKIT_TEST_S3_REGION"] ?? "us-east-1"
            let store = MotoS3Server(endpoint: endpoint, keyID: keyID, secret: secret, region: region)
            for bucket in buckets {
                // An existing bucket (409 BucketAlreadyOwnedByYou) is fine.
                _ = try? ExternalStore.curl(
                    ["-X", "PUT", "\(endpoint.absoluteString.trimmingSuffix("/"))/\(bucket)"], keyID: keyID,
                    secret: secret, region: region)
            }
            stores.append(store)
        }
        return stores
    }

    private let external: ExternalStore?

    private init(endpoint: URL, keyID: String, secret: String, region: String) {
        self.endpoint = endpoint
        self.keyID = keyID
        self.secret = secret
        self.region = region
        external = ExternalStore()
    }

    /// Writes to a store that is not moto: curl with its own signer.
    struct ExternalStore {
        func put(
            _ bucket: String, _ key: String, file: String, keyID: String, secret: String, region: String, endpoint: URL
        ) throws {
            let status = try Self.curl(
                [
                    "-X", "PUT", "--data-binary", "@" + file,
                    "\(endpoint.absoluteString.trimmingSuffix("/"))/\(bucket)/\(key)",
                ],
                keyID: keyID, secret: secret, region: region)
            guard status == 0 else { throw NSError(domain: "s3", code: Int(status)) }
        }

        @discardableResult
        static func curl(_ arguments: [String], keyID: String, secret: String, region: String) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments =
                [
                    "-sf", "-o", "/dev/null", "--aws-sigv4", "aws:amz:\(region):s3", "-u", "\(keyID):\(secret)",
                    "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-H", "Content-Type: application/octet-stream",
                ] + arguments
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    private func command(_ text: String) throws {
        input.fileHandleForWriting.write(Data((text + "\n").utf8))
        let answer = try Self.line(from: output.fileHandleForReading, buffer: &pending, seconds: 30)
        guard answer == "ok" else {
            throw NSError(domain: "moto", code: 1, userInfo: [NSLocalizedDescriptionKey: answer])
        }
    }

    /// The access the tests' loads use: the server's key, or `secret` in its place.
    func access(secret: String? = nil, buckets: Set<String>? = nil) -> S3Access {
        S3Access(
            region: region, accessKeyID: keyID, secretAccessKey: secret ?? self.secret, endpoint: endpoint,
            buckets: buckets)
    }

    func stop() {
        guard external == nil else { return }
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        // Lets Foundation see the exit: a Process keeps itself alive until it has.
        process.waitUntilExit()
    }

    deinit { if external == nil, process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    private static func line(from handle: FileHandle, buffer: inout Data, seconds: Double) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer = Data(buffer[(newline + 1)...])
                return line
            }
            var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 200) > 0 else { continue }
            let chunk = handle.availableData
            if chunk.isEmpty { throw POSIXError(.EPIPE) }  // the server ended
            buffer.append(chunk)
        }
        throw POSIXError(.ETIMEDOUT)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
