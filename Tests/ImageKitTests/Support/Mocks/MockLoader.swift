import Foundation

@testable import ImageKit

/// A scripted loader: answers per URL path, counts requests, records them, and can hold loads
/// until released (to cancel them mid-flight). No sockets.
final class MockLoader: ImageLoading, @unchecked Sendable {
    // Invariant: every mutable field is touched only under `lock`.
    enum Answer {
        case data(Data, headers: [String: String] = [:], chunks: Int = 1, chunkDelay: TimeInterval = 0)
        case failure(ImageError)
    }

    private let lock = NSLock()
    private var answers: [String: Answer] = [:]
    private var counts: [String: Int] = [:]
    private var requests: [ImageLoadRequest] = []
    private var held: [Token] = []
    /// Hold every load until `releaseAll()`.
    private var holds = false
    private var inFlight = 0
    private var mostInFlight = 0
    private let queue = DispatchQueue(label: "MockLoader", attributes: .concurrent)

    func answer(_ path: String, _ answer: Answer) {
        lock.lock(); answers[path] = answer; lock.unlock()
    }

    func requestCount(_ path: String) -> Int {
        lock.lock(); defer { lock.unlock() }; return counts[path] ?? 0
    }

    var totalRequests: Int { lock.lock(); defer { lock.unlock() }; return requests.count }
    var lastRequest: ImageLoadRequest? { lock.lock(); defer { lock.unlock() }; return requests.last }

    func setHolds(_ value: Bool) { lock.lock(); holds = value; lock.unlock() }

    /// Starts every held load.
    func releaseAll() {
        lock.lock(); let tokens = held; held = []; holds = false; lock.unlock()
        for token in tokens { run(token) }
    }

    /// The most loads that were running at once (started and not yet finished or cancelled).
    var maxConcurrentLoads: Int { lock.lock(); defer { lock.unlock() }; return mostInFlight }

    /// Loads running now.
    var runningLoads: Int { lock.lock(); defer { lock.unlock() }; return inFlight }

    private func loadEnded() { lock.lock(); inFlight -= 1; lock.unlock() }

    /// Loads held right now (not yet released).
    var heldCount: Int { lock.lock(); defer { lock.unlock() }; return held.count }

    func canLoad(_ url: URL) -> Bool { url.scheme == "mock" }

    final class Token: ImageLoadCancellable, @unchecked Sendable {
        // Invariant: `completion` and `received` are touched only under `lock`.
        let request: ImageLoadRequest
        let progress: (@Sendable (ImageLoadProgress) -> Void)?
        private var completion: (@Sendable (Result<ImageLoadResponse, ImageError>) -> Void)?
        private let lock = NSLock()
        private(set) var wasCancelled = false
        private let onEnd: @Sendable () -> Void

        init(
            request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
            completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void,
            onEnd: @escaping @Sendable () -> Void = {}
        ) {
            self.request = request
            self.progress = progress
            self.completion = completion
            self.onEnd = onEnd
        }

        var isDone: Bool { lock.lock(); defer { lock.unlock() }; return completion == nil }

        func finish(_ result: Result<ImageLoadResponse, ImageError>) {
            lock.lock(); let completion = self.completion; self.completion = nil; lock.unlock()
            guard let completion else { return }
            onEnd()
            completion(result)
        }

        func cancel() {
            lock.lock(); wasCancelled = completion != nil; lock.unlock()
            finish(.failure(ImageError(.cancelled, "mock load cancelled")))
        }
    }

    @discardableResult
    func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        let token = Token(request: request, progress: progress, completion: completion) { [weak self] in
            self?.loadEnded()
        }
        lock.lock()
        inFlight += 1
        mostInFlight = max(mostInFlight, inFlight)
        counts[request.url.path, default: 0] += 1
        requests.append(request)
        let hold = holds
        if hold { held.append(token) }
        lock.unlock()
        if !hold { queue.async { self.run(token) } }
        return token
    }

    private func run(_ token: Token) {
        let url = token.request.url
        lock.lock(); let answer = answers[url.path]; lock.unlock()
        guard let answer else {
            token.finish(.failure(ImageError(.invalidStatusCode, "\(url): HTTP 404", httpStatusCode: 404)))
            return
        }
        switch answer {
        case .failure(let error):
            token.finish(.failure(error))
        case .data(let data, let headers, let chunks, let delay):
            if let validators = token.request.cachedValidators, let etag = validators.etag, etag == headers["etag"] {
                token.finish(
                    .success(
                        ImageLoadResponse(
                            url: url, data: Data(), statusCode: 304, headers: headers, isNotModified: true)))
                return
            }
            let size = max(1, (data.count + chunks - 1) / max(1, chunks))
            var offset = 0
            while offset < data.count {
                guard !token.isDone else { return }
                let end = min(data.count, offset + size)
                let chunk = token.request.deliversReceivedBytes ? Data(data[offset..<end]) : nil
                offset = end
                token.progress?(
                    ImageLoadProgress(receivedBytes: Int64(offset), expectedBytes: Int64(data.count), newBytes: chunk))
                if delay > 0 && offset < data.count { Thread.sleep(forTimeInterval: delay) }
            }
            token.finish(.success(ImageLoadResponse(url: url, data: data, statusCode: 200, headers: headers)))
        }
    }
}
