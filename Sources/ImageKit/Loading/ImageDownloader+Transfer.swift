internal import CCurl
import DequeModule
import Foundation
import Tracing

// One attempt of a transfer: its headers, curl's options, its client span, the engine it runs on,
// and the progress it reports.
extension ImageDownloader {
    /// What is left of the transfer's ``ImageDownloaderConfiguration/totalTimeout`` (nil: no
    /// deadline), counted from its first attempt.
    func remainingTime(of operation: Operation, now: DispatchTime = .now()) -> TimeInterval? {
        guard let total = configuration.totalTimeout else { return nil }
        guard let first = operation.firstStart else { return total }
        return total - Double(now.uptimeNanoseconds &- first.uptimeNanoseconds) / 1e9
    }

    func start(_ operation: Operation) {
        let request = operation.request
        let now = DispatchTime.now()
        // Under the state lock: `finish` reads it there when it decides on a retry.
        let (remaining, attempt) = state.withLock { _ -> (TimeInterval?, Int) in
            if operation.firstStart == nil { operation.firstStart = now }
            return (remainingTime(of: operation, now: now), operation.attempt)
        }
        let target = operation.route
        let span = operation.serviceContext.map { Self.startClientSpan(in: $0, url: target.url, attempt: attempt) }
        let traceHeaders = span.map { ImageKitTracing.propagationHeaders(for: $0.context) } ?? [:]
        var headerList = baseHeaderList
        var userAgent: String?
        let resume =
            configuration.resumableDataLimit > 0 && request.cachedValidators == nil
            ? resumable.take(operation.key) : nil
        if !request.headers.isEmpty || request.cachedValidators != nil || resume != nil || target.awsSigning != nil
            || !traceHeaders.isEmpty
        {
            var headers = baseHeaders.merging(request.headers) { $1 }.merging(traceHeaders) { $1 }
            if let s3 = target.awsSigning {
                headers.merge(s3.signedHeaders) { $1 }
                // curl signs every header of the list; signers (botocore, hence moto) leave
                // User-Agent out, and proxies rewrite it: sent as curl's own, unsigned.
                for name in headers.keys where name.lowercased() == "user-agent" {
                    userAgent = headers.removeValue(forKey: name)
                }
            }
            if let validators = request.cachedValidators {
                if let etag = validators.etag { headers["If-None-Match"] = etag }
                if let lastModified = validators.lastModified { headers["If-Modified-Since"] = lastModified }
            }
            if let resume {
                headers["Range"] = "bytes=\(resume.data.count)-"
                headers["If-Range"] = resume.validator
            }
            headerList = CurlHeaderList(headers)
        }
        var options = CurlTransferOptions(
            url: target.url, headers: headerList,
            connectTimeout: configuration.connectTimeout ?? configuration.timeout,
            stallTimeout: configuration.timeout, totalTimeout: remaining.map { max(0.001, $0) },
            maxRedirects: configuration.maxRedirects,
            maxBodySize: configuration.maxBodySize,
            allowsInvalidCertificates: request.allowsInvalidSSLCertificates
                ?? configuration.allowsInvalidSSLCertificates,
            handlesCookies: request.handlesCookies ?? configuration.handlesCookies,
            credentials: configuration.credentials,
            addressPolicy: configuration.addressPolicy, proxy: configuration.proxy, noProxy: configuration.noProxy,
            caBundlePath: configuration.caBundlePath, caDirectory: configuration.caDirectory,
            pinnedPublicKey: configuration.pinnedPublicKey, hostOverrides: hostOverrides,
            curlOptions: configuration.curlOptions)
        if let s3 = target.awsSigning {
            options.awsSigV4 = (s3.sigV4Provider, s3.accessKeyID, s3.secretAccessKey)
            options.userAgent = userAgent
            options.credentials = nil
            // A signature holds for one host: S3 answers a wrong region with a redirect that
            // must not be followed with it. The address policy applies to the store as to any host.
            options.maxRedirects = 0
        }
        let transfer = CurlTransfer(options: options, bodyPool: bodyPool)
        transfer.onProgress = { [weak self] progress in
            self?.deliverProgress(
                of: operation, progress.offset(by: Int64(resume?.data.count ?? 0)), resumedFrom: resume?.data)
        }
        transfer.onComplete = { [weak self] transfer, code in
            guard let self else {
                span?.end()
                return
            }
            let outcome = self.outcome(
                of: transfer, code: code, request: request, key: operation.key, resumedFrom: resume)
            if let span { Self.endClientSpan(span, outcome) }
            finish(operation, outcome)
        }
        let host = target.url.host ?? ""
        let multiplexes = target.url.scheme?.lowercased() == "https"
        let (cancelledMeanwhile, engine) = state.withLock { state -> (Bool, Int) in
            let engine = Self.engine(for: host, multiplexes: multiplexes, loads: state.engineLoads)
            state.engineLoads[engine] += 1
            operation.engine = engine
            operation.transfer = transfer
            operation.reportsProgress = operation.subscribers.values.contains { $0.progress != nil }
            transfer.reportsProgress = operation.reportsProgress
            return (operation.subscribers.isEmpty, engine)
        }
        if cancelledMeanwhile {
            span?.end()
            finish(operation, .failure(ImageError(.cancelled, "cancelled before it started")))
            return
        }
        engines[engine].send(.add(transfer))
    }

    /// HTTPS to one host stays on one engine (HTTP/2 multiplexes on one connection per multi
    /// handle); anything else goes to the least busy one.
    static func engine(for host: String, multiplexes: Bool, loads: [Int]) -> Int {
        guard loads.count > 1 else { return 0 }
        if multiplexes {
            var hash: UInt32 = 2_166_136_261  // FNV-1a: the same host always lands on the same engine
            for byte in host.lowercased().utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
            return Int(hash % UInt32(loads.count))
        }
        return loads.indices.min { loads[$0] < loads[$1] }!
    }

    /// Tells every caller of `operation` its progress (on the transfer thread, called by curl);
    /// a caller that asked for the bytes gets those it has not been handed yet, copied once.
    func deliverProgress(of operation: Operation, _ progress: ImageLoadProgress, resumedFrom prefix: Data?) {
        let reports = state.withLock { _ -> [(@Sendable (ImageLoadProgress) -> Void, ImageLoadProgress)] in
            var reports: [(@Sendable (ImageLoadProgress) -> Void, ImageLoadProgress)] = []
            for (id, subscriber) in operation.subscribers {
                guard let callback = subscriber.progress else { continue }
                var report = progress
                if subscriber.wantsBytes, let transfer = operation.transfer {
                    let bytes = transfer.body(from: subscriber.bytesDelivered, after: prefix ?? Data())
                    operation.subscribers[id]?.bytesDelivered += bytes.count
                    operation.bytesObserved = true
                    report.newBytes = bytes
                }
                reports.append((callback, report))
            }
            return reports
        }
        guard !reports.isEmpty else { return }
        configuration.callbackQueue.async { for (callback, report) in reports { callback(report) } }
    }
}

extension ImageLoadProgress {
    /// The same progress with `offset` bytes received before (a resumed transfer).
    func offset(by offset: Int64) -> ImageLoadProgress {
        guard offset > 0 else { return self }
        return ImageLoadProgress(
            receivedBytes: receivedBytes + offset, expectedBytes: expectedBytes.map { $0 + offset })
    }
}

// The transfer as a client span (OpenTelemetry's HTTP conventions): one per attempt.
extension ImageDownloader {
    static func startClientSpan(in context: ServiceContext, url: URL, attempt: Int) -> any Span {
        let span = InstrumentationSystem.tracer.startSpan("GET", context: context, ofKind: .client)
        guard span.isRecording else { return span }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = "GET"
            attributes["url.full"] = ImageKitTracing.spanURL(url)
            if let host = url.host { attributes["server.address"] = host }
            if attempt > 0 { attributes["http.request.resend_count"] = attempt }
        }
        return span
    }

    static func endClientSpan(_ span: any Span, _ outcome: Result<RawResponse, ImageError>) {
        switch outcome {
        case .success(let response):
            span.attributes["http.response.status_code"] = response.statusCode
            if response.statusCode >= 400 { span.setStatus(SpanStatus(code: .error)) }
        case .failure(let error):
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }
}
