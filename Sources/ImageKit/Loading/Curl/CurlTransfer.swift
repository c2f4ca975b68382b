internal import CCurl
internal import CImageCodecs
import Foundation

/// Settings one transfer is built from (a snapshot of the downloader's configuration plus the
/// request).
struct CurlTransferOptions: Sendable {
    var url: URL
    var headers: CurlHeaderList
    var connectTimeout: TimeInterval
    /// Abort when fewer than 1 byte/s arrive for this long (an idle timeout, like URLRequest's).
    var stallTimeout: TimeInterval
    var totalTimeout: TimeInterval?
    var maxRedirects: Int
    var maxBodySize: Int?
    var allowsInvalidCertificates: Bool
    var handlesCookies: Bool
    var credentials: (user: String, password: String)?
    /// Signs the request with AWS Signature V4: curl's provider string ("aws:amz:REGION:s3"),
    /// the access key ID and the secret.
    var awsSigV4: (provider: String, keyID: String, secret: String)?
    /// `User-Agent` set apart from ``headers`` (`CURLOPT_USERAGENT`), which curl does not sign.
    var userAgent: String?
    var addressPolicy: AddressPolicy?
    var proxy: String?
    var noProxy: String?
    var caBundlePath: String?
    var caDirectory: String?
    var pinnedPublicKey: String?
    var hostOverrides: CurlStringList?
    var curlOptions: [ImageDownloaderConfiguration.CurlOption] = []
}

/// Request headers as the `curl_slist` curl reads, built once and shared by every transfer that
/// sends the same set (normally all of a downloader's). Immutable; freed with the last user.
final class CurlHeaderList: @unchecked Sendable {
    // Invariant for @unchecked Sendable: the list is never changed after init.
    let list: UnsafeMutablePointer<curl_slist>?

    init(_ headers: [String: String]) {
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            list = curl_slist_append(list, "\(name): \(value)")
        }
        self.list = list
    }

    deinit { curl_slist_free_all(list) }
}

/// A `curl_slist` of plain strings (`CURLOPT_RESOLVE`), built once per downloader. Immutable.
final class CurlStringList: @unchecked Sendable {
    // Invariant for @unchecked Sendable: the list is never changed after init.
    let list: UnsafeMutablePointer<curl_slist>?

    init(_ strings: [String]) {
        var list: UnsafeMutablePointer<curl_slist>?
        for string in strings { list = curl_slist_append(list, string) }
        self.list = list
    }

    deinit { curl_slist_free_all(list) }
}

/// One transfer and what it receives. Created on any thread; the engine lends it an easy
/// handle from `configure` until `detach`, and only the engine thread touches that handle. The
/// received bytes are behind a lock so consumers can take a snapshot while the transfer runs.
final class CurlTransfer: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `easy`, `headers`, `errorBuffer` and the
    // progress fields are touched only by the engine thread once the transfer is added;
    // `body` is guarded by its lock.
    let options: CurlTransferOptions
    private(set) var easy: UnsafeMutableRawPointer?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private let body: Locked<BodyBuffer>
    var responseHeaders: [String: String] = [:]
    var exceededMaxBody = false
    var lastReported: Int64 = -1
    var cancelRequested = false
    /// When bytes last arrived (or the transfer started), on the monotonic clock: the engine's
    /// stall detection. Engine thread only.
    var lastActivity: Double = 0
    /// Set when the engine ended the transfer itself (a stall).
    var engineError: String?
    /// The address the policy refused (engine thread; read after completion).
    var refusedAddress: String?
    /// Set before the transfer is added, later only by the engine thread.
    var reportsProgress = false
    /// Engine-thread callbacks.
    var onProgress: (@Sendable (ImageLoadProgress) -> Void)?
    var onComplete: (@Sendable (CurlTransfer, CURLcode) -> Void)?

    init(options: CurlTransferOptions, bodyPool: BodyBufferPool) {
        self.options = options
        body = Locked(BodyBuffer(pool: bodyPool))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        body.withLock { $0.release() }
        errorBuffer.deallocate()
    }

    private var raw: UnsafeMutableRawPointer { easy! }

    /// Gives the handle back to the engine (which resets it before any reuse).
    func detach() -> UnsafeMutableRawPointer? {
        defer { easy = nil }
        // curl 7.88's curl_easy_reset forgets, without freeing, the list of cookie files that
        // COOKIEFILE "" started; NULL frees it (the shared jar keeps its cookies).
        if easy != nil, options.handlesCookies { set(CURLOPT_COOKIEFILE, pointer: nil) }
        return easy
    }

    private func set(_ option: CURLoption, _ value: Int) {
        _ = ik_curl_easy_setopt_long(raw, Int32(option.rawValue), value)
    }

    private func set(_ option: CURLoption, string: String) {
        // curl copies string options (since 7.17).
        _ = string.withCString { ik_curl_easy_setopt_pointer(raw, Int32(option.rawValue), $0) }
    }

    private func set(_ option: CURLoption, pointer: UnsafeRawPointer?) {
        _ = ik_curl_easy_setopt_pointer(raw, Int32(option.rawValue), pointer)
    }

    /// Applies every option to a fresh or reset handle. Called on the engine thread just before
    /// the handle is added.
    func configure(_ easy: UnsafeMutableRawPointer, share: UnsafeMutableRawPointer?) {
        self.easy = easy
        if let share { set(CURLOPT_SHARE, pointer: share) }
        let context = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        set(CURLOPT_URL, string: options.url.absoluteString)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_ERRORBUFFER, pointer: UnsafeRawPointer(errorBuffer))
        set(CURLOPT_PROTOCOLS_STR, string: "http,https")
        set(CURLOPT_REDIR_PROTOCOLS_STR, string: "http,https")
        set(CURLOPT_FOLLOWLOCATION, options.maxRedirects > 0 ? 1 : 0)
        set(CURLOPT_MAXREDIRS, options.maxRedirects)
        set(CURLOPT_CONNECTTIMEOUT_MS, Int(options.connectTimeout * 1000))
        set(CURLOPT_LOW_SPEED_LIMIT, 1)
        set(CURLOPT_LOW_SPEED_TIME, max(1, Int(options.stallTimeout.rounded(.up))))
        if let total = options.totalTimeout { set(CURLOPT_TIMEOUT_MS, Int(total * 1000)) }
        set(CURLOPT_ACCEPT_ENCODING, string: "")  // every encoding curl supports (gzip, deflate, br …)
        set(CURLOPT_TCP_KEEPALIVE, 1)
        // Receive in 64 KiB reads, not curl's default 16 KiB: a quarter of the recv calls and
        // write callbacks (the curl command line uses 100 KiB). Not 128 KiB: curl mallocs this
        // buffer per transfer, and at glibc's 128 KiB mmap threshold every transfer then paid
        // fresh page faults (make bench-net: 0.6-0.85x curl's throughput instead of ~1x).
        set(CURLOPT_BUFFERSIZE, 64 << 10)
        if let maxBodySize = options.maxBodySize {
            _ = ik_curl_easy_setopt_offset(raw, Int32(CURLOPT_MAXFILESIZE_LARGE.rawValue), Int64(maxBodySize))
        }
        if options.allowsInvalidCertificates {
            set(CURLOPT_SSL_VERIFYPEER, 0)
            set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        // Turns the cookie engine on; with the share, its jar is the downloader's one.
        if options.handlesCookies { set(CURLOPT_COOKIEFILE, string: "") }
        if let credentials = options.credentials {
            set(CURLOPT_HTTPAUTH, 1)  // CURLAUTH_BASIC (a macro Swift cannot import)
            set(CURLOPT_USERNAME, string: credentials.user)
            set(CURLOPT_PASSWORD, string: credentials.password)
        }
        if let sigV4 = options.awsSigV4 {
            // Sets CURLOPT_HTTPAUTH to CURLAUTH_AWS_SIGV4 itself; the name and password are the key pair.
            set(CURLOPT_AWS_SIGV4, string: sigV4.provider)
            set(CURLOPT_USERNAME, string: sigV4.keyID)
            set(CURLOPT_PASSWORD, string: sigV4.secret)
        }
        if let userAgent = options.userAgent { set(CURLOPT_USERAGENT, string: userAgent) }
        set(CURLOPT_HTTPHEADER, pointer: UnsafeRawPointer(options.headers.list))
        if let proxy = options.proxy { set(CURLOPT_PROXY, string: proxy) }
        if let noProxy = options.noProxy { set(CURLOPT_NOPROXY, string: noProxy) }
        if let path = options.caBundlePath { set(CURLOPT_CAINFO, string: path) }
        if let path = options.caDirectory { set(CURLOPT_CAPATH, string: path) }
        if let key = options.pinnedPublicKey { set(CURLOPT_PINNEDPUBLICKEY, string: key) }
        if let overrides = options.hostOverrides { set(CURLOPT_RESOLVE, pointer: UnsafeRawPointer(overrides.list)) }
        if options.addressPolicy != nil {
            set(CURLOPT_OPENSOCKETDATA, pointer: context)
            _ = ik_curl_easy_set_opensocket_function(raw, CurlTransfer.openSocket)
        }
        set(CURLOPT_WRITEDATA, pointer: context)
        _ = ik_curl_easy_set_write_function(raw, CurlTransfer.write)
        set(CURLOPT_HEADERDATA, pointer: context)
        _ = ik_curl_easy_set_header_function(raw, CurlTransfer.header)
        set(CURLOPT_XFERINFODATA, pointer: context)
        _ = ik_curl_easy_set_xferinfo_function(raw, CurlTransfer.progress)
        applyProgressOption()
        // Only https can multiplex (HTTP/2 over TLS): there, wait for a connection being set up
        // rather than opening another. On plain http this would serialise transfers.
        if options.url.scheme?.lowercased() == "https" { set(CURLOPT_PIPEWAIT, 1) }
        set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        for option in options.curlOptions {
            switch option {
            case .integer(let number, let value): _ = ik_curl_easy_setopt_long(raw, number, value)
            case .string(let number, let value): _ = value.withCString { ik_curl_easy_setopt_pointer(raw, number, $0) }
            }
        }
    }

    /// curl's socket opener with the address policy in front: a socket only for an allowed
    /// address, so a refused one never sees a packet. Called for every connection curl opens:
    /// each address of each name, on every redirect hop (engine thread).
    private static let openSocket: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeMutableRawPointer?) -> Int32 =
        {
            context, _, rawAddress in
            let transfer = CurlTransfer.from(context)
            guard let rawAddress, let policy = transfer.options.addressPolicy else { return -1 }
            let address = rawAddress.assumingMemoryBound(to: curl_sockaddr.self)
            let family = address.pointee.family
            let sockaddr = UnsafeRawPointer(address).advanced(by: MemoryLayout<curl_sockaddr>.offset(of: \.addr)!)
            let ip: IPAddress?
            if family == AF_INET {
                ip = IPAddress(
                    bytes: withUnsafeBytes(of: sockaddr.loadUnaligned(as: sockaddr_in.self).sin_addr) { Array($0) })
            } else if family == AF_INET6 {
                ip = IPAddress(
                    bytes: withUnsafeBytes(of: sockaddr.loadUnaligned(as: sockaddr_in6.self).sin6_addr) { Array($0) })
            } else {
                ip = nil
            }
            // With a proxy the connection goes to the proxy the operator named; hosts written as
            // addresses are checked in `configure` and on redirects below.
            let throughProxy = transfer.options.proxy != nil
            if !throughProxy {
                guard let ip, policy.allows(ip, host: transfer.currentHost) else {
                    transfer.refusedAddress = ip?.description ?? "an address of family \(family)"
                    return -1
                }
            }
            return socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
        }

    /// The host of the hop being connected (redirects change it).
    var currentHost: String? {
        guard let easy else { return nil }
        var pointer: UnsafePointer<CChar>?
        _ = ik_curl_easy_getinfo_string(easy, Int32(CURLINFO_EFFECTIVE_URL.rawValue), &pointer)
        return pointer.flatMap { URL(string: String(cString: $0))?.host }
    }

    /// The URL of the last hop, after redirects.
    var effectiveURL: URL? {
        guard let easy else { return nil }
        var pointer: UnsafePointer<CChar>?
        _ = ik_curl_easy_getinfo_string(easy, Int32(CURLINFO_EFFECTIVE_URL.rawValue), &pointer)
        return pointer.flatMap { URL(string: String(cString: $0)) }
    }

    /// Turns curl's progress function on or off to match ``reportsProgress`` (also mid-transfer).
    func applyProgressOption() {
        set(CURLOPT_NOPROGRESS, reportsProgress ? 0 : 1)
    }

    static func from(_ pointer: UnsafeMutableRawPointer?) -> CurlTransfer {
        Unmanaged<CurlTransfer>.fromOpaque(pointer!).takeUnretainedValue()
    }

    private static let write: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int =
        {
            bytes, size, count, context in
            let transfer = CurlTransfer.from(context)
            let length = size * count
            guard let bytes, length > 0 else { return length }
            transfer.lastActivity = CurlEngine.monotonicNow()
            let accepted = transfer.body.withLock { body -> Bool in
                if let limit = transfer.options.maxBodySize, body.count + length > limit {
                    transfer.exceededMaxBody = true
                    return false
                }
                return body.append(bytes, count: length)
            }
            return accepted ? length : 0  // 0: curl aborts with CURLE_WRITE_ERROR
        }

    private static let header:
        @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
            bytes, size, count, context in
            let length = size * count
            guard let bytes, length > 0 else { return length }
            let transfer = CurlTransfer.from(context)
            transfer.lastActivity = CurlEngine.monotonicNow()
            transfer.receiveHeaderLine(
                UnsafeBufferPointer(start: UnsafeRawPointer(bytes).assumingMemoryBound(to: UInt8.self), count: length))
            return length
        }

    /// One raw header line from curl.
    enum HeaderLine: Equatable {
        /// A status line: a new response starts (after a redirect or 100 Continue).
        case status
        /// `name` lower-cased, `value` trimmed.
        case field(name: String, value: String)
    }

    /// Parses one raw header line: a status line, a field, or nil (blank, no colon, no name).
    /// Byte-level because this runs for every header of every transfer on the engine thread.
    static func parseHeaderLine(_ line: UnsafeBufferPointer<UInt8>) -> HeaderLine? {
        if line.starts(with: "HTTP/".utf8) { return .status }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var nameEnd = colon
        while nameEnd > 0, isBlank(line[nameEnd - 1]) { nameEnd -= 1 }
        var valueStart = colon + 1, valueEnd = line.count
        while valueStart < valueEnd, isBlank(line[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, isBlank(line[valueEnd - 1]) { valueEnd -= 1 }
        guard nameEnd > 0 else { return nil }
        let name = String(unsafeUninitializedCapacity: nameEnd) { name in
            for index in 0..<nameEnd {
                let byte = line[index]
                name[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            }
            return nameEnd
        }
        return .field(
            name: name,
            value: String(decoding: UnsafeBufferPointer(rebasing: line[valueStart..<valueEnd]), as: UTF8.self))
    }

    private func receiveHeaderLine(_ line: UnsafeBufferPointer<UInt8>) {
        switch Self.parseHeaderLine(line) {
        case .status?:
            responseHeaders = [:]
        case .field(let name, let value)?:
            responseHeaders[name] = value
            // Size the body once instead of growing it chunk by chunk (page faults, copies).
            if name == "content-length", let length = Int(value), length > 0, length <= options.maxBodySize ?? Int.max {
                _ = body.withLock { $0.reserve(length) }
            }
        case nil:
            break
        }
    }

    private static let progress: @convention(c) (UnsafeMutableRawPointer?, Int64, Int64, Int64, Int64) -> Int32 = {
        context, total, received, _, _ in
        let transfer = CurlTransfer.from(context)
        if received != transfer.lastReported, received > 0 {
            transfer.lastReported = received
            transfer.onProgress?(ImageLoadProgress(receivedBytes: received, expectedBytes: total > 0 ? total : nil))
        }
        return 0
    }

    // MARK: Results (engine thread, after completion)

    /// The body received (once; the transfer keeps nothing).
    func takeBody() -> Data { body.withLock { $0.take() } }

    /// A copy of the bytes received so far (any thread, while the transfer runs).
    /// The body from byte `offset` on, counting `prefix` (the bytes of an earlier attempt this
    /// transfer resumes) as its start: a copy of what a caller has not seen yet.
    func body(from offset: Int, after prefix: Data) -> Data {
        var bytes = offset < prefix.count ? Data(prefix[(prefix.startIndex + offset)...]) : Data()
        body.withLock { bytes.append($0.copy(from: max(0, offset - prefix.count))) }
        return bytes
    }

    var statusCode: Int {
        var code = 0
        _ = ik_curl_easy_getinfo_long(raw, Int32(CURLINFO_RESPONSE_CODE.rawValue), &code)
        return code
    }

    var errorMessage: String { engineError ?? String(cString: errorBuffer) }

    var metrics: TransferMetrics {
        func seconds(_ info: CURLINFO) -> TimeInterval {
            var value: Int64 = 0
            _ = ik_curl_easy_getinfo_offset(raw, Int32(info.rawValue), &value)
            return TimeInterval(value) / 1e6
        }
        var metrics = TransferMetrics()
        metrics.nameLookup = seconds(CURLINFO_NAMELOOKUP_TIME_T)
        metrics.connect = seconds(CURLINFO_CONNECT_TIME_T)
        metrics.tlsHandshake = max(0, seconds(CURLINFO_APPCONNECT_TIME_T) - metrics.connect)
        metrics.timeToFirstByte = seconds(CURLINFO_STARTTRANSFER_TIME_T)
        metrics.total = seconds(CURLINFO_TOTAL_TIME_T)
        var downloaded: Int64 = 0
        _ = ik_curl_easy_getinfo_offset(raw, Int32(CURLINFO_SIZE_DOWNLOAD_T.rawValue), &downloaded)
        metrics.bytesReceived = downloaded
        var version = 0
        _ = ik_curl_easy_getinfo_long(raw, Int32(CURLINFO_HTTP_VERSION.rawValue), &version)
        switch version {
        case Int(CURL_HTTP_VERSION_1_0): metrics.httpVersion = "1.0"
        case Int(CURL_HTTP_VERSION_1_1): metrics.httpVersion = "1.1"
        case Int(CURL_HTTP_VERSION_2_0): metrics.httpVersion = "2"
        case 30: metrics.httpVersion = "3"
        default: metrics.httpVersion = ""
        }
        var connects = 0
        _ = ik_curl_easy_getinfo_long(raw, Int32(CURLINFO_NUM_CONNECTS.rawValue), &connects)
        metrics.reusedConnection = connects == 0
        return metrics
    }
}
