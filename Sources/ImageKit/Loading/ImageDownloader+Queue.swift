import DequeModule
import Foundation
import Tracing

// The queue: requests joined into shared transfers by key, waiting by priority until a slot is free.
extension ImageDownloader {
    /// Transfers not started yet: one deque per priority, so choosing the next one costs O(1)
    /// however long the queue is. A transfer abandoned or moved to another lane while waiting
    /// is only marked and skipped when its old entry reaches the front.
    struct WaitingQueue {
        private var lanes = [Deque<Operation>](repeating: [], count: ImageLoadPriority.allCases.count)
        private(set) var count = 0

        mutating func append(_ operation: Operation) {
            operation.isWaiting = true
            operation.lane = operation.priority.rawValue
            lanes[operation.lane].append(operation)
            count += 1
        }

        mutating func remove(_ operation: Operation) {
            guard operation.isWaiting else { return }
            operation.isWaiting = false
            count -= 1
        }

        /// Moves a waiting operation to the lane of its current priority (escalation).
        mutating func reprioritize(_ operation: Operation) {
            guard operation.isWaiting, operation.lane != operation.priority.rawValue else { return }
            operation.lane = operation.priority.rawValue
            lanes[operation.lane].append(operation)
        }

        /// Highest priority first; within one, oldest (FIFO) or newest (LIFO) first.
        mutating func next(lifo: Bool) -> Operation? {
            for lane in lanes.indices.reversed() {
                while let operation = lifo ? lanes[lane].popLast() : lanes[lane].popFirst() {
                    guard operation.isWaiting, operation.lane == lane else { continue }
                    operation.isWaiting = false
                    count -= 1
                    return operation
                }
            }
            return nil
        }

        var all: [Operation] {
            lanes.enumerated().flatMap { lane, operations in operations.filter { $0.isWaiting && $0.lane == lane } }
        }
    }

    /// Runs the asynchronous hook (when there is one) and then ``enqueue(_:subscriber:ticket:)``.
    func submit(_ request: ImageLoadRequest, subscriber: Subscriber, router: TransferRouter?) -> Token {
        var subscriber = subscriber
        subscriber.priority = request.priority
        subscriber.responseModifier = request.hooks.responseModifier ?? configuration.responseModifier
        subscriber.decryptor = request.hooks.decryptor ?? configuration.decryptor
        subscriber.wantsBytes = request.deliversReceivedBytes && subscriber.decryptor == nil
        guard let willLoad = request.hooks.willLoad ?? configuration.willLoad else {
            let ticket = Ticket(.done)
            enqueue(request, subscriber: subscriber, ticket: ticket, router: router)
            return Token(downloader: self, ticket: ticket)
        }
        let ticket = Ticket(.pending(cancelled: false, priority: nil))
        let captured = subscriber
        Task { [weak self] in
            let outcome: Result<ImageLoadRequest, ImageError>
            do {
                outcome = .success(try await willLoad(request))
            } catch let error as ImageError {
                outcome = .failure(error)
            } catch {
                outcome = .failure(ImageError(.invalidURL, "the willLoad hook refused \(request.url): \(error)"))
            }
            guard let self else {
                captured.completion(.failure(ImageError(.cancelled, "the downloader was shut down")))
                return
            }
            var subscriber = captured
            let (cancelled, priority) = ticket.place.withLock { place -> (Bool, ImageLoadPriority?) in
                guard case .pending(let cancelled, let priority) = place else { return (true, nil) }
                if cancelled { place = .done }
                return (cancelled, priority)
            }
            if cancelled {
                deliver(.failure(ImageError(.cancelled, "the download was cancelled")), to: [subscriber])
                return
            }
            switch outcome {
            case .failure(let error):
                ticket.place.withLock { $0 = .done }
                deliver(.failure(error), to: [subscriber])
            case .success(var hooked):
                hooked.hooks.willLoad = nil
                if let priority { hooked.priority = priority }
                subscriber.priority = hooked.priority
                enqueue(hooked, subscriber: subscriber, ticket: ticket, router: router)
            }
        }
        return Token(downloader: self, ticket: ticket)
    }

    /// The key transfers are shared by: the final URL and headers (digested), conditional
    /// requests apart, TLS or cookie settings other than the configuration's, and the store
    /// access that signs it (another access may not read the same object).
    static func transferKey(
        for request: ImageLoadRequest, route: TransferRoute, configuration: ImageDownloaderConfiguration
    ) -> String {
        var key = request.url.absoluteString
        if let access = route.awsSigning {
            key += "\u{0}s3=" + access.routeIdentity
        }
        let digest = RequestHeaderDigest.digest(request.headers)
        if !digest.isEmpty { key += "\u{0}headers=" + digest }
        if request.cachedValidators != nil { key += "\u{0}conditional" }
        if let insecure = request.allowsInvalidSSLCertificates, insecure != configuration.allowsInvalidSSLCertificates {
            key += "\u{0}tls=\(insecure)"
        }
        if let cookies = request.handlesCookies, cookies != configuration.handlesCookies {
            key += "\u{0}cookies=\(cookies)"
        }
        return key
    }

    /// `url`'s route: the store loader's, else a plain http(s) one.
    private func route(_ url: URL, _ router: TransferRouter?) throws(ImageError) -> TransferRoute {
        if let router { return try router(url) }
        return try webRoute(url)
    }

    func enqueue(_ request: ImageLoadRequest, subscriber: Subscriber, ticket: Ticket, router: TransferRouter?) {
        let route: TransferRoute
        let modified: ImageLoadRequest
        do throws(ImageError) {
            if let modifier = request.hooks.requestModifier ?? configuration.requestModifier {
                _ = try self.route(request.url, router)  // refused before the modifier sees it
                guard let changed = modifier(request) else {
                    throw ImageError(.invalidURL, "the request modifier refused \(request.url)")
                }
                route = try self.route(changed.url, router)
                modified = changed
            } else {
                route = try self.route(request.url, router)
                modified = request
            }
        } catch {
            ticket.place.withLock { $0 = .done }
            deliver(.failure(error), to: [subscriber])
            return
        }
        let request = modified
        let key = Self.transferKey(for: request, route: route, configuration: configuration)
        let needsProgress = state.withLock { state -> (CurlTransfer, Int)? in
            state.sequence += 1
            let id = state.sequence
            ticket.place.withLock { $0 = .attached(key: key, id: id) }
            let operation: Operation
            if let existing = state.operations[key] {
                operation = existing
                operation.subscribers[id] = subscriber
                state.waiting.reprioritize(operation)
            } else {
                operation = Operation(
                    key: key, request: request, route: route, serviceContext: ServiceContext.current)
                operation.subscribers[id] = subscriber
                state.operations[key] = operation
                state.waiting.append(operation)
            }
            guard subscriber.progress != nil, !operation.reportsProgress else { return nil }
            operation.reportsProgress = true
            guard let transfer = operation.transfer, let engine = operation.engine else { return nil }
            return (transfer, engine)  // running without progress: turn it on
        }
        if let (transfer, engine) = needsProgress { engines[engine].send(.reportProgress(transfer)) }
        pump()
    }

    /// Starts waiting transfers while there is room: highest priority first, then FIFO or LIFO.
    func pump() {
        let starting: [Operation] = state.withLock { state in
            var started: [Operation] = []
            let lifo = configuration.executionOrder == .lifo
            while !state.suspended, state.running < max(1, configuration.maxConcurrentDownloads),
                let operation = state.waiting.next(lifo: lifo)
            {
                state.running += 1
                started.append(operation)
            }
            return started
        }
        for operation in starting { start(operation) }
    }

    func setPriority(_ priority: ImageLoadPriority, of ticket: Ticket) {
        let attached = ticket.place.withLock { place -> (String, Int)? in
            switch place {
            case .pending(let cancelled, _):
                place = .pending(cancelled: cancelled, priority: priority)
                return nil
            case .attached(let key, let id): return (key, id)
            case .done: return nil
            }
        }
        guard let (key, id) = attached else { return }
        state.withLock { state in
            guard let operation = state.operations[key], operation.subscribers[id] != nil else { return }
            operation.subscribers[id]?.priority = priority
            state.waiting.reprioritize(operation)
        }
    }
}
