internal import CCurl
import Foundation

/// What a transfer produced before any caller's hooks: the status, headers and body, or the
/// transport's error.
struct RawResponse: Sendable {
    var url: URL
    var finalURL: URL
    var statusCode: Int
    var headers: [String: String]
    var body: Data
    var metrics: TransferMetrics
}

extension ImageDownloader {
    /// The transfer's outcome: a transport error, or the response (whatever its status). A body
    /// cut short is kept for a later resume; a 206 answering our `Range` is joined to the bytes
    /// kept before.
    func outcome(
        of transfer: CurlTransfer, code: CURLcode, request: ImageLoadRequest, key: String,
        resumedFrom resume: ResumableDataStore.Entry?
    ) -> Result<RawResponse, ImageError> {
        let url = request.url
        if code != CURLE_OK {
            if transfer.exceededMaxBody || code == CURLE_FILESIZE_EXCEEDED {
                return .failure(
                    ImageError(.responseTooLarge, "\(url): the body is over \(configuration.maxBodySize ?? 0) bytes"))
            }
            if let refused = transfer.refusedAddress {
                return .failure(ImageError(.forbiddenAddress, "\(url): the address policy refuses \(refused)"))
            }
            keepForResume(transfer, request: request, key: key, resumedFrom: resume)
            return .failure(Self.error(for: code, message: transfer.errorMessage, url: url))
        }
        var headers = transfer.responseHeaders
        var status = transfer.statusCode
        var body = transfer.takeBody()
        if let resume {
            if status == 206, Self.contentRangeStart(headers["content-range"]) == resume.data.count {
                body = resume.data + body
                status = 200
                headers["content-range"] = nil
                headers["content-length"] = String(body.count)
            } else if status == 206 {
                // A range we did not ask for: the bytes cannot be placed.
                return .failure(ImageError(.invalidResponse, "\(url): a 206 response for another range"))
            }
        }
        return .success(
            RawResponse(
                url: url, finalURL: transfer.effectiveURL ?? url, statusCode: status, headers: headers,
                body: body, metrics: transfer.metrics))
    }

    /// Keeps what an interrupted 200 transfer received when the response can be resumed.
    private func keepForResume(
        _ transfer: CurlTransfer, request: ImageLoadRequest, key: String, resumedFrom resume: ResumableDataStore.Entry?
    ) {
        guard configuration.resumableDataLimit > 0, request.cachedValidators == nil else { return }
        let headers = transfer.responseHeaders
        let status = transfer.statusCode
        guard status == 200 || status == 206, headers["accept-ranges"]?.lowercased() == "bytes" || status == 206,
            let validator = ResumableDataStore.validator(headers)
        else { return }
        var data = transfer.takeBody()
        if status == 206, let resume {
            guard Self.contentRangeStart(headers["content-range"]) == resume.data.count else { return }
            data = resume.data + data
        }
        guard !data.isEmpty else { return }
        resumable.keep(key, data: data, validator: validator)
    }

    /// The first byte position of `Content-Range: bytes FIRST-LAST/LENGTH`.
    static func contentRangeStart(_ value: String?) -> Int? {
        guard let value = value?.lowercased(), value.hasPrefix("bytes ") else { return nil }
        let range = value.dropFirst(6)
        guard let dash = range.firstIndex(of: "-") else { return nil }
        return Int(range[..<dash].trimmingCharacters(in: .whitespaces))
    }

    /// One caller's result: its response modifier, then the checks, then its decryptor.
    func result(
        of outcome: Result<RawResponse, ImageError>, for subscriber: Subscriber,
        request: ImageLoadRequest
    ) -> Result<ImageLoadResponse, ImageError> {
        let raw: RawResponse
        switch outcome {
        case .failure(let error): return .failure(error)
        case .success(let response): raw = response
        }
        let url = raw.url
        var head = ImageLoadResponseHead(statusCode: raw.statusCode, headers: raw.headers)
        if let modifier = subscriber.responseModifier {
            guard let modified = modifier(head) else {
                return .failure(ImageError(.invalidResponse, "\(url): the response modifier refused the response"))
            }
            head = modified
        }
        let status = head.statusCode
        let headers = head.headers
        if status == 304, request.cachedValidators != nil {
            return .success(
                ImageLoadResponse(
                    url: url, data: Data(), statusCode: 304, headers: headers, isNotModified: true,
                    metrics: raw.metrics, finalURL: raw.finalURL))
        }
        guard configuration.acceptableStatusCodes.contains(status) else {
            return .failure(ImageError(.invalidStatusCode, "\(url): HTTP \(status)", httpStatusCode: status))
        }
        if let validator = configuration.responseValidator, !validator(status, headers) {
            return .failure(ImageError(.invalidResponse, "\(url): the response validator refused the response"))
        }
        if let acceptable = configuration.acceptableContentTypes {
            let type =
                headers["content-type"]?.split(separator: ";").first.map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                } ?? ""
            guard acceptable.contains(type) else {
                return .failure(ImageError(.invalidContentType, "\(url): Content-Type '\(type)' is not acceptable"))
            }
        }
        var data = raw.body
        guard !data.isEmpty else { return .failure(ImageError(.invalidResponse, "\(url): the body is empty")) }
        if let decryptor = subscriber.decryptor {
            guard let decrypted = decryptor(data, headers) else {
                return .failure(ImageError(.invalidResponse, "\(url): the decryptor refused the data"))
            }
            data = decrypted
        }
        return .success(
            ImageLoadResponse(
                url: url, data: data, statusCode: status, headers: headers, metrics: raw.metrics,
                finalURL: raw.finalURL))
    }

    // Spec: ERR-08.
    /// curl's error codes as ImageKit's.
    static func error(for code: CURLcode, message: String, url: URL) -> ImageError {
        let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        switch code {
        case CURLE_ABORTED_BY_CALLBACK: return ImageError(.cancelled, "\(url): cancelled")
        case CURLE_OPERATION_TIMEDOUT: return ImageError(.timedOut, "\(url): \(text)")
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return ImageError(.cannotFindHost, "\(url): \(text)")
        case CURLE_COULDNT_CONNECT: return ImageError(.cannotConnect, "\(url): \(text)")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return ImageError(.connectionLost, "\(url): \(text)")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return ImageError(.secureConnectionFailed, "\(url): \(text)")
        case CURLE_TOO_MANY_REDIRECTS: return ImageError(.invalidResponse, "\(url): \(text)")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: return ImageError(.invalidURL, "\(url): \(text)")
        default: return ImageError(.networkError, "\(url): \(text) (curl error \(code.rawValue))")
        }
    }
}

/// Bytes of interrupted transfers, by transfer key, kept for a resume: at most `limit` bytes
/// in all, the oldest entries dropped first.
final class ResumableDataStore: Sendable {
    struct Entry: Sendable {
        var data: Data
        /// The `If-Range` value: the strong ETag, else Last-Modified.
        var validator: String
    }

    private let limit: Int
    private let state = Locked((entries: [String: Entry](), order: [String](), bytes: 0))

    init(limit: Int) { self.limit = limit }

    /// A strong ETag, else Last-Modified; nil when the response cannot be resumed safely.
    static func validator(_ headers: [String: String]) -> String? {
        if let etag = headers["etag"], !etag.hasPrefix("W/") { return etag }
        return headers["last-modified"]
    }

    func keep(_ key: String, data: Data, validator: String) {
        guard data.count <= limit else { return }
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) {
                state.bytes -= old.data.count
                state.order.removeAll { $0 == key }
            }
            while state.bytes + data.count > limit, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                state.bytes -= state.entries.removeValue(forKey: oldest)?.data.count ?? 0
            }
            state.entries[key] = Entry(data: data, validator: validator)
            state.order.append(key)
            state.bytes += data.count
        }
    }

    /// The entry for `key`, removed (a transfer uses it once).
    func take(_ key: String) -> Entry? {
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: key) else { return nil }
            state.bytes -= entry.data.count
            state.order.removeAll { $0 == key }
            return entry
        }
    }

    /// Bytes kept now.
    var byteCount: Int { state.withLock { $0.bytes } }
}
