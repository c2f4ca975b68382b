import Foundation

/// Loads `s3://BUCKET/KEY` URLs from S3 or an S3-compatible store (MinIO, Ceph RGW, Cloudflare
/// R2) through an ``ImageDownloader``: the request goes to the store's endpoint, signed with AWS
/// Signature Version 4 by libcurl itself (`CURLOPT_AWS_SIGV4`), and is otherwise an HTTP load —
/// the downloader's address policy (applied to the endpoint), deadline, retries, size limit,
/// `ETag`/`Last-Modified` revalidation and statuses (a missing key is the store's 404; a key the
/// credentials cannot read, or a wrong secret, its 403). Transfers are shared only between
/// callers with the same access.
///
/// ```swift
/// let downloader = ImageDownloader()
/// let access = S3Access.fromEnvironment(buckets: ["photos"])!   // AWS_ACCESS_KEY_ID …
/// let loaders = ImageLoadersManager(loaders: [downloader, S3Loader(access: access, downloader: downloader)])
/// let manager = ImageManager(loader: loaders)
/// let result = try await manager.loadImage(URL(string: "s3://photos/2024/cat.jpg")!)
/// ```
public struct S3Loader: SourceLoading {
    /// The store, the credentials and the buckets that may be read.
    public let access: S3Access
    /// The downloader the requests go through.
    public let downloader: ImageDownloader

    /// A loader reading with `access` through `downloader`.
    public init(access: S3Access, downloader: ImageDownloader) {
        self.access = access
        self.downloader = downloader
    }

    /// `s3`.
    public var schemes: Set<String> { ["s3"] }

    /// True for `s3:` URLs.
    public func canLoad(_ url: URL) -> Bool { url.scheme?.lowercased() == "s3" }

    /// True when the URL's bucket is among ``S3Access/buckets`` (or no list is set).
    public func allows(_ url: URL) -> Bool { access.buckets.map { $0.contains(url.host ?? "") } ?? true }

    /// `s3://BUCKET/KEY`, also written `s3:/BUCKET/KEY`; a bucket and a key are required.
    public func sourceURL(_ text: String) throws(ImageError) -> URL {
        let url = try SourceText.url(text, schemes: schemes, form: .authority)
        guard url.path.count > 1 else { throw ImageError(.invalidURL, "an s3 source is s3://BUCKET/KEY") }
        return url
    }

    /// Loads through the downloader, from the store's HTTP(S) URL for the request's `s3://` URL
    /// (``S3Access/httpURL(for:)``: a bucket outside ``S3Access/buckets`` fails with
    /// ``ImageError/Code/invalidURL`` before anything is sent).
    @discardableResult public func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        let access = access
        return downloader.download(request, progress: progress, completion: completion) {
            url throws(ImageError) in
            guard url.scheme?.lowercased() == "s3" else { throw ImageError(.invalidURL, "not an s3:// URL: \(url)") }
            return ImageDownloader.TransferRoute(url: try access.httpURL(for: url), awsSigning: access)
        }
    }
}

/// How an ``S3Loader`` reaches `s3://BUCKET/KEY` URLs: an S3 (or S3-compatible: MinIO, Ceph RGW,
/// Cloudflare R2) endpoint, a region, credentials and the buckets it may read.
///
/// ```swift
/// let access = S3Access(accessKeyID: key, secretAccessKey: secret, buckets: ["photos"])
/// let loader = S3Loader(access: access, downloader: ImageDownloader())
/// ```
public struct S3Access: Sendable, Hashable {
    /// The region requests are signed for (`us-east-1` when none is set).
    public var region: String
    /// The access key ID (`AWS_ACCESS_KEY_ID`).
    public var accessKeyID: String
    /// The secret access key (`AWS_SECRET_ACCESS_KEY`). Never logged or put in an error.
    public var secretAccessKey: String
    /// A temporary session token (`AWS_SESSION_TOKEN`), sent as `x-amz-security-token`.
    public var sessionToken: String?
    /// An S3-compatible endpoint (`http://127.0.0.1:9000`, `https://ACCOUNT.r2.cloudflarestorage.com`);
    /// nil: AWS's own, `https://BUCKET.s3.REGION.amazonaws.com`. The downloader's address policy
    /// applies to the endpoint as to any host: a store on a private network needs that network
    /// allowed (``AddressPolicy/allowing(networks:hosts:)``; `imagekit serve --allow-address`).
    public var endpoint: URL?
    /// Path-style addressing (`ENDPOINT/BUCKET/KEY`) instead of virtual-hosted
    /// (`BUCKET.ENDPOINT/KEY`); most S3-compatible stores want it. Default: true with an
    /// ``endpoint``, false for AWS.
    public var usesPathStyle: Bool
    /// The buckets that may be read; nil: any bucket the credentials can read. An `s3://` URL
    /// for another bucket fails with ``ImageError/Code/invalidURL`` before anything is sent.
    public var buckets: Set<String>?

    /// Access with the given credentials; the endpoint and addressing default to AWS's.
    public init(
        region: String = "us-east-1", accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil,
        endpoint: URL? = nil, usesPathStyle: Bool? = nil, buckets: Set<String>? = nil
    ) {
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.endpoint = endpoint
        self.usesPathStyle = usesPathStyle ?? (endpoint != nil)
        self.buckets = buckets
    }

    /// Access from the standard variables — `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`, `AWS_REGION` (or `AWS_DEFAULT_REGION`) — each overridden by the same
    /// name with `prefix` (`IMAGEKIT_SERVE_S3_ACCESS_KEY_ID` …) when one is given and set. nil
    /// when no key ID or secret is set.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment, prefix: String? = nil,
        endpoint: URL? = nil, usesPathStyle: Bool? = nil, buckets: Set<String>? = nil
    ) -> S3Access? {
        func value(_ name: String) -> String? {
            if let prefix, let own = environment[prefix + name], !own.isEmpty { return own }
            return environment["AWS_" + name].flatMap { $0.isEmpty ? nil : $0 }
        }
        guard let key = value("ACCESS_KEY_ID"), let secret = value("SECRET_ACCESS_KEY") else { return nil }
        let region = value("REGION") ?? value("DEFAULT_REGION") ?? "us-east-1"
        return S3Access(
            region: region, accessKeyID: key, secretAccessKey: secret, sessionToken: value("SESSION_TOKEN"),
            endpoint: endpoint, usesPathStyle: usesPathStyle, buckets: buckets)
    }

    /// The HTTP(S) URL an `s3://BUCKET/KEY` URL is fetched from, or an ``ImageError/Code/invalidURL``
    /// error: no bucket or key, a bucket name S3 would refuse, or a bucket outside ``buckets``.
    public func httpURL(for url: URL) throws(ImageError) -> URL {
        guard url.scheme?.lowercased() == "s3", let bucket = url.host, !bucket.isEmpty else {
            throw ImageError(.invalidURL, "not an s3://BUCKET/KEY URL")
        }
        guard Self.isValidBucketName(bucket) else { throw ImageError(.invalidURL, "'\(bucket)' is not a bucket name") }
        if let buckets, !buckets.contains(bucket) {
            throw ImageError(.invalidURL, "the bucket '\(bucket)' is not among the allowed ones")
        }
        // The key as written (still percent-encoded), without the leading slash.
        let key = String(url.path(percentEncoded: true).drop(while: { $0 == "/" }))
        guard !key.isEmpty else { throw ImageError(.invalidURL, "s3://\(bucket)/ names no key") }
        // curl removes dot segments from a path: `photos/../other/…` would read another bucket
        // on a path-style endpoint. Such keys are refused, encoded or not.
        for segment in key.split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = segment.removingPercentEncoding ?? String(segment)
            guard decoded != ".", decoded != ".." else {
                throw ImageError(.invalidURL, "an s3 key has no '.' or '..' segments")
            }
        }
        // Only an object version may be asked (`?versionId=…`); other subresources (`?acl`,
        // `?tagging` …) are not images.
        let version = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?
            .first(where: { $0.name == "versionId" })?.value
        let query =
            version.flatMap { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) }
            .map { "?versionId=" + $0 } ?? ""
        let base: String
        if let endpoint {
            var root = endpoint.absoluteString
            while root.hasSuffix("/") { root.removeLast() }
            if usesPathStyle {
                base = "\(root)/\(bucket)/"
            } else {
                let scheme = endpoint.scheme ?? "https"
                let authority = root.dropFirst(scheme.count + 3)
                base = "\(scheme)://\(bucket).\(authority)/"
            }
        } else if usesPathStyle {
            base = "https://s3.\(region).amazonaws.com/\(bucket)/"
        } else {
            base = "https://\(bucket).s3.\(region).amazonaws.com/"
        }
        guard let http = URL(string: base + key + query) else {
            throw ImageError(.invalidURL, "s3://\(bucket)/… cannot be addressed")
        }
        return http
    }

    /// S3's rules for bucket names: 3–63 lower-case letters, digits, dots and hyphens, starting
    /// and ending with a letter or digit (which also keeps a bucket from changing the host or path).
    /// - Parameter name: the bucket name, as in `s3://NAME/…`.
    public static func isValidBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else { return false }
        func isAlphanumeric(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }
        guard isAlphanumeric(bytes.first!), isAlphanumeric(bytes.last!) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    /// A digest of what two accesses that may read different objects differ in.
    var routeIdentity: String {
        RequestHeaderDigest.digest([
            "endpoint": endpoint?.absoluteString ?? "aws", "region": region, "key": accessKeyID,
            "secret": secretAccessKey, "token": sessionToken ?? "", "path-style": String(usesPathStyle),
        ])
    }

    /// curl's `CURLOPT_AWS_SIGV4` provider string for S3 in ``region``.
    var sigV4Provider: String { "aws:amz:\(region):s3" }

    /// The signed headers every S3 GET carries: the payload hash (of an empty body) and the
    /// session token.
    var signedHeaders: [String: String] {
        var headers = ["x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]
        if let sessionToken { headers["x-amz-security-token"] = sessionToken }
        return headers
    }
}

extension S3Access: CustomStringConvertible {
    /// The endpoint, region and key ID; never the secret or the token.
    public var description: String {
        "S3Access(\(endpoint?.absoluteString ?? "aws"), region: \(region), key: \(accessKeyID))"
    }
}
