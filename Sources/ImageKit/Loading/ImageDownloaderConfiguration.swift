import Foundation

/// Settings of an ``ImageDownloader`` (defaults from SDWebImage where it has one).
///
/// ```swift
/// var configuration = ImageDownloaderConfiguration(totalTimeout: 10)
/// configuration.addressPolicy = .publicOnly        // user-supplied URLs: no internal addresses
/// configuration.retryPolicy = ImageRetryPolicy(maxRetries: 2)
/// let downloader = ImageDownloader(configuration: configuration)
/// ```
public struct ImageDownloaderConfiguration: Sendable {
    /// Which waiting transfer of one priority starts first.
    public enum ExecutionOrder: Sendable {
        /// First in, first out (default).
        case fifo
        /// Last in, first out: the newest request (the image now on screen) first.
        case lifo
    }

    /// A curl option the configuration does not name, by its `CURLOPT_*` number, applied after
    /// every option ImageKit sets (so it can override them). For options a library user needs
    /// rarely; an option that installs callbacks or changes the write target breaks transfers.
    public enum CurlOption: Sendable, Hashable {
        /// A `long` option, e.g. `.integer(option: 7 /* CURLOPT_PORT... */, value: 8080)`.
        case integer(option: Int32, value: Int)
        /// A string option (curl copies it).
        case string(option: Int32, value: String)
    }

    /// Transfers running at once (6); the rest wait, by priority and then ``executionOrder``.
    public var maxConcurrentDownloads: Int
    /// Stall timeout: a transfer that receives nothing for this long fails (15 s). A large image
    /// on a slow but steady link is not killed by it.
    public var timeout: TimeInterval
    /// Connection set-up limit (defaults to ``timeout``).
    public var connectTimeout: TimeInterval?
    /// One deadline for the whole download of a URL: connection, redirects, body and retries
    /// together, counted from the first attempt's start (a retry starts only when time is left);
    /// nil = none.
    public var totalTimeout: TimeInterval?
    /// FIFO (default) or LIFO among waiting transfers of one priority.
    public var executionOrder: ExecutionOrder
    /// Headers sent with every request (a request's own headers win).
    public var headers: [String: String]
    /// Statuses that count as success (200..<300); others fail with `invalidStatusCode`.
    public var acceptableStatusCodes: Range<Int>
    /// When set, responses whose Content-Type (without parameters) is not listed fail.
    public var acceptableContentTypes: Set<String>?
    /// Bodies larger than this fail with ``ImageError/Code/responseTooLarge``, with or without
    /// a Content-Length (default 256 MiB).
    public var maxBodySize: Int?
    /// Redirects followed at most (10); each hop is checked by the address policy.
    public var maxRedirects: Int
    /// Basic-auth credentials sent with every request.
    public var credentials: (user: String, password: String)?
    /// curl's in-memory cookie engine (off by default).
    public var handlesCookies: Bool
    /// Accept any TLS certificate (off by default; for tests and self-signed servers).
    public var allowsInvalidSSLCertificates: Bool
    /// Connections to one host at once (6), and in all (0: no limit), per network thread
    /// (``networkThreads``). Connections in use never exceed ``maxConcurrentDownloads``; plain
    /// HTTP spread over several threads may keep up to `networkThreads` times this many open.
    public var maxConnectionsPerHost: Int
    /// Connections open at once in all, per network thread (0: no limit).
    public var maxTotalConnections: Int
    /// Threads that run transfers, each with its own curl multi handle (default: 2 when the
    /// machine has two cores or more, else 1). Plain-HTTP transfers go to the least busy
    /// thread; HTTPS transfers to one host always share a thread, so HTTP/2 multiplexes them
    /// on one connection. More than one lets receiving (a copy per byte, TLS decryption)
    /// use a second core when many transfers run at once.
    public var networkThreads: Int
    /// Runs before each request is queued and may suspend (signing, token refresh); a
    /// request's own ``ImageLoadHooks/willLoad`` wins.
    public var willLoad: (@Sendable (ImageLoadRequest) async throws -> ImageLoadRequest)?
    // Spec: CTX-09.
    /// Changes or refuses (nil) a request before it is sent (SDWebImage's request modifier); a
    /// request's own ``ImageLoadHooks/requestModifier`` wins.
    public var requestModifier: (@Sendable (ImageLoadRequest) -> ImageLoadRequest?)?
    // Spec: CTX-10.
    /// Changes or refuses a response's status and headers before they are checked; a request's
    /// own ``ImageLoadHooks/responseModifier`` wins.
    public var responseModifier: (@Sendable (ImageLoadResponseHead) -> ImageLoadResponseHead?)?
    /// Inspects a response's status and headers (after any response modifier); returning false
    /// refuses it with ``ImageError/Code/invalidResponse``.
    public var responseValidator: (@Sendable (_ statusCode: Int, _ headers: [String: String]) -> Bool)?
    // Spec: CTX-10.
    /// Transforms the received bytes (for example base64-decodes them); nil refuses them. A
    /// request's own ``ImageLoadHooks/decryptor`` wins.
    public var decryptor: (@Sendable (Data, _ headers: [String: String]) -> Data?)?
    /// How transient failures are retried. Default ``ImageRetryPolicy/none``: a library that
    /// retries by itself hides outages from apps that already retry; servers opt in (the image
    /// service uses 2 retries).
    public var retryPolicy: ImageRetryPolicy
    /// Which addresses transfers may connect to; nil (the default): any. Set it to
    /// ``AddressPolicy/publicOnly`` when URLs come from users.
    public var addressPolicy: AddressPolicy?
    /// A proxy URL (`http://proxy:3128`, `socks5h://…`); nil: curl's environment variables
    /// (`http_proxy`, `https_proxy`, `no_proxy`) as curl reads them.
    public var proxy: String?
    /// Hosts that bypass ``proxy``: curl's comma-separated `NOPROXY` list (`*` for all).
    public var noProxy: String?
    /// A PEM file of trusted CA certificates instead of the system's.
    public var caBundlePath: String?
    /// A directory of hashed CA certificates (`c_rehash`) instead of the system's.
    public var caDirectory: String?
    /// Pins the server's public key: `sha256//BASE64[;sha256//…]` or a PEM/DER file path.
    /// A server whose key does not match fails with `secureConnectionFailed`.
    public var pinnedPublicKey: String?
    /// Fixed name resolutions in curl's `HOST:PORT:ADDRESS[,ADDRESS]` form
    /// (`images.example.com:443:10.0.0.5`). The address policy still checks the addresses.
    public var hostOverrides: [String]
    /// The hosts http(s) URLs may name: host names, or `*.example.com` for a domain and every
    /// name under it; empty (the default): any host. Another host fails with
    /// ``ImageError/Code/invalidURL`` before anything is sent (thumbor's `ALLOWED_SOURCES`;
    /// redirects are the address policy's to judge).
    public var allowedHosts: [String] = []
    /// curl options the configuration does not name; see ``CurlOption``.
    public var curlOptions: [CurlOption]
    /// Bytes of interrupted transfers kept so the next load of the URL asks only for the rest
    /// (`Range` + `If-Range`, Nuke's resumable downloads): at most this many bytes in all,
    /// oldest dropped first; 0 turns it off. Default 32 MiB. Only responses with a strong
    /// `ETag` or a `Last-Modified` and `Accept-Ranges: bytes` are kept.
    public var resumableDataLimit: Int
    /// Where progress and completions are delivered (never the curl thread).
    public var callbackQueue: DispatchQueue
    /// Where downloads, bytes, retries and durations are reported, and retries logged as
    /// warnings (``ImageKitTelemetry``).
    public var telemetry = ImageKitTelemetry()

    /// A configuration; every parameter has the default documented on its property.
    public init(
        maxConcurrentDownloads: Int = 6, timeout: TimeInterval = 15, connectTimeout: TimeInterval? = nil,
        totalTimeout: TimeInterval? = nil, executionOrder: ExecutionOrder = .fifo, headers: [String: String] = [:],
        acceptableStatusCodes: Range<Int> = 200..<300, acceptableContentTypes: Set<String>? = nil,
        maxBodySize: Int? = 256 << 20, maxRedirects: Int = 10, credentials: (user: String, password: String)? = nil,
        handlesCookies: Bool = false, allowsInvalidSSLCertificates: Bool = false, maxConnectionsPerHost: Int = 6,
        maxTotalConnections: Int = 0, networkThreads: Int = min(2, ProcessInfo.processInfo.activeProcessorCount),
        retryPolicy: ImageRetryPolicy = .none, addressPolicy: AddressPolicy? = nil,
        resumableDataLimit: Int = 32 << 20,
        callbackQueue: DispatchQueue = DispatchQueue(label: "ImageKit.ImageDownloader.callbacks")
    ) {
        self.networkThreads = networkThreads
        self.maxConcurrentDownloads = maxConcurrentDownloads
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.executionOrder = executionOrder
        self.headers = headers
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
        self.maxBodySize = maxBodySize
        self.maxRedirects = maxRedirects
        self.credentials = credentials
        self.handlesCookies = handlesCookies
        self.allowsInvalidSSLCertificates = allowsInvalidSSLCertificates
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxTotalConnections = maxTotalConnections
        self.retryPolicy = retryPolicy
        self.addressPolicy = addressPolicy
        self.hostOverrides = []
        self.curlOptions = []
        self.resumableDataLimit = resumableDataLimit
        self.callbackQueue = callbackQueue
    }

    /// ``acceptHeader`` and `User-Agent: ImageKit/<version>`. A request modifier may replace
    /// either.
    public static var defaultHeaders: [String: String] {
        ["Accept": acceptHeader, "User-Agent": "ImageKit/\(ImageKit.version)"]
    }

    /// The `Accept` value: the formats this build decodes that a server would pick over JPEG
    /// and PNG, best first (AVIF, JPEG XL, WebP, APNG), then any image at q=0.8 (JPEG, PNG, GIF
    /// and the rest), as browsers send it. With every trait enabled:
    /// `image/avif,image/jxl,image/webp,image/apng,image/*;q=0.8`.
    public static var acceptHeader: String {
        var types: [String] = []
        #if AVIF
        types.append("image/avif")
        #endif
        #if JXL
        types.append("image/jxl")
        #endif
        types += ["image/webp", "image/apng", "image/*;q=0.8"]
        return types.joined(separator: ",")
    }
}
