import Foundation
import ImageKit

// Sources: which may be served, fetching them (and the watermark and frame pictures), and how a
// failed fetch is answered.
extension ImageService {
    /// A source's bytes, what they are (sniffed once, here), the origin's `Last-Modified`, and
    /// what identifies this version of it: the origin's strong `ETag` with the length, else a
    /// digest of the bytes.
    struct Source {
        var data: Data
        var signature: ImageSignature
        var lastModified: String?
        var identity: String
    }

    /// The source's bytes (the source cache, else the origin: address policy, limits, deadline).
    func loadSource(_ url: URL, trace: RequestTrace) async throws(ImageServiceError) -> Source {
        try await ImageKitTracing.span("imagekit.fetch") { span throws(ImageServiceError) in
            if span.isRecording { span.attributes["url.full"] = ImageKitTracing.spanURL(url) }
            let source = try await fetchSource(url, trace: trace)
            if span.isRecording {
                span.updateAttributes { attributes in
                    attributes["imagekit.cache_tier"] = trace.tier?.rawValue
                    attributes["imagekit.source.bytes"] = source.data.count
                }
            }
            return source
        }
    }

    private func fetchSource(_ url: URL, trace: RequestTrace) async throws(ImageServiceError) -> Source {
        let started = ContinuousClock.now
        do {
            let fetched = try await sources.fetch(url)
            let data = fetched.data
            guard !data.isEmpty else {
                throw ImageServiceError(.emptySource, "the origin sent no bytes")
            }
            trace.tier = fetched.fromOrigin ? .origin : .sourceDisk
            metrics.fetched(bytes: data.count, duration: ContinuousClock.now - started, fromOrigin: fetched.fromOrigin)
            return Source(
                data: data, signature: fetched.signature, lastModified: fetched.http?.lastModified,
                identity: fetched.identity)
        } catch let error as ImageServiceError {
            throw error
        } catch let error as ImageError {
            throw Self.originError(error)
        } catch {
            throw ImageServiceError(.originFailed, "the source could not be fetched")
        }
    }

    /// How a failure to fetch the source is answered (the status table in the README).
    static func originError(_ error: ImageError) -> ImageServiceError {
        switch error.code {
        case .invalidStatusCode where error.httpStatusCode == 404 || error.httpStatusCode == 410:
            return ImageServiceError(.sourceNotFound, "the origin answered \(error.httpStatusCode!)")
        case .invalidStatusCode:
            return ImageServiceError(
                .originFailed, "the origin answered \(error.httpStatusCode.map(String.init) ?? "an error")")
        case .timedOut: return ImageServiceError(.originTimeout, "the origin did not answer in time")
        case .forbiddenAddress:
            return ImageServiceError(.addressNotAllowed, "the source resolves to an address that is not allowed")
        case .responseTooLarge:
            return ImageServiceError(.sourceTooLarge, "the source is larger than the limit")
        case .invalidURL: return ImageServiceError(.invalidSource, "the source URL cannot be fetched")
        case .blacklisted:
            return ImageServiceError(.sourceNotFound, "the source failed permanently a moment ago")
        default: return ImageServiceError(.originFailed, "the source could not be fetched (\(error.code))")
        }
    }

    /// Each `watermark()` and `frame()` picture, fetched as a source is (allowed hosts, address policy, limits,
    /// the source cache); by the URL as the filter names it.
    func loadWatermarks(_ operations: ImageOperations, trace: RequestTrace) async throws(ImageServiceError)
        -> [String: Data]
    {
        var watermarks: [String: Data] = [:]
        for filter in operations.filters {
            let text: String
            switch filter {
            case .watermark(let url, _, _, _, _, _), .frame(let url): text = url
            default: continue
            }
            guard watermarks[text] == nil else { continue }
            let url = try sources.resolve(ImageRequest.sourceURL(text, addsScheme: true))
            guard sources.allows(url) else {
                throw ImageServiceError(.sourceNotAllowed, "the host of a watermark or frame is not allowed")
            }
            let tier = trace.tier
            watermarks[text] = try await loadSource(url, trace: trace).data
            trace.tier = tier  // the response's tier is its source's
        }
        return watermarks
    }
}
