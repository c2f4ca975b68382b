internal import CCurl
internal import CImageCodecs
import Foundation

/// One `CURLM` driven by one dedicated thread: the only thread that touches curl handles.
/// Other threads send commands and wake it with `curl_multi_wakeup`.
///
/// Easy handles are reused: a finished one is reset and kept for the next transfer, so its
/// state is allocated once, not per download. The downloader's share handle (possibly used by
/// several engines) gives every transfer the same TLS session cache (resumed handshakes on new
/// connections), DNS cache and, when cookies are on, one cookie jar.
final class CurlEngine: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `multi`, `share`, `active` and `idleHandles` are used
    // only on the engine thread (after init); `commands` is locked; `curl_multi_wakeup` is
    // thread-safe.
    private let multi: UnsafeMutableRawPointer
    private let share: UnsafeMutableRawPointer?
    private let commands = Locked<[Command]>([])
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var idleHandles: [UnsafeMutableRawPointer] = []
    private let maxIdleHandles: Int
    private let stopped = DispatchSemaphore(value: 0)
    /// Set once in init, before the thread starts. Weak: the thread's block holds the engine.
    private weak var thread: Thread?

    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        /// A caller that wants progress joined a transfer started without it.
        case reportProgress(CurlTransfer)
        case stop
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    static func initializeCurl() { _ = globalInit }

    /// `share` (from `ik_curl_share_create`, thread-safe) must outlive ``shutdown()``.
    init(maxHostConnections: Int, maxTotalConnections: Int, maxIdleHandles: Int, share: UnsafeMutableRawPointer?) {
        _ = Self.globalInit
        multi = curl_multi_init()
        self.maxIdleHandles = maxIdleHandles
        self.share = share
        let raw = multi
        _ = ik_curl_multi_setopt_long(raw, Int32(CURLMOPT_PIPELINING.rawValue), Int(CURLPIPE_MULTIPLEX))
        _ = ik_curl_multi_setopt_long(raw, Int32(CURLMOPT_MAX_HOST_CONNECTIONS.rawValue), maxHostConnections)
        _ = ik_curl_multi_setopt_long(raw, Int32(CURLMOPT_MAX_TOTAL_CONNECTIONS.rawValue), maxTotalConnections)
        let thread = Thread { [self] in run() }
        thread.name = "ImageKit.curl"
        self.thread = thread
        thread.start()
    }

    func send(_ command: Command) {
        commands.withLock { $0.append(command) }
        // From the engine thread itself (a completion starting the next transfer) the loop
        // sees the command before it polls again: no wakeup, which would cost two syscalls
        // and an extra multi pass over every handle per transfer.
        if Thread.current !== thread { curl_multi_wakeup(multi) }
    }

    /// Stops the thread: every transfer still running completes with `cancelled`. Waits for it.
    func shutdown() {
        send(.stop)
        stopped.wait()
        curl_multi_cleanup(multi)
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles.removeAll()
    }

    /// Reports the end of a transfer once (its results are read from the handle inside the
    /// callback), then drops its callbacks: they capture the downloader's operation, which
    /// holds the transfer (a cycle that would keep every body). The handle is reset and kept.
    private func complete(_ transfer: CurlTransfer, _ code: CURLcode) {
        let onComplete = transfer.onComplete
        transfer.onComplete = nil
        transfer.onProgress = nil
        onComplete?(transfer, code)
        if let easy = transfer.detach() {
            if idleHandles.count < maxIdleHandles {
                curl_easy_reset(easy)
                idleHandles.append(easy)
            } else {
                curl_easy_cleanup(easy)
            }
        }
    }

    static let stallCheckInterval = 0.25

    static func monotonicNow() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Ends transfers that received nothing for their stall timeout. curl's own low-speed check
    /// averages the rate over a window of several seconds, so a transfer that stops dead ended
    /// about four seconds after its timeout; this one fires within ``stallCheckInterval``.
    private func endStalledTransfers() {
        guard !active.isEmpty else { return }
        let now = Self.monotonicNow()
        for (easy, transfer) in active where now - transfer.lastActivity > transfer.options.stallTimeout {
            active[easy] = nil
            curl_multi_remove_handle(multi, easy)
            transfer.engineError = "no data received for \(transfer.options.stallTimeout) s"
            complete(transfer, CURLE_OPERATION_TIMEDOUT)
        }
    }

    private func run() {
        ik_thread_set_name("ImageKit.curl")  // Foundation's Thread.name does not reach the OS
        var running = true
        while running {
            for command in commands.withLock({ commands in
                defer { commands.removeAll() }; return commands
            }) {
                switch command {
                case .add(let transfer):
                    if transfer.cancelRequested {
                        complete(transfer, CURLE_ABORTED_BY_CALLBACK)
                        continue
                    }
                    guard let easy = idleHandles.popLast() ?? curl_easy_init() else {
                        complete(transfer, CURLE_OUT_OF_MEMORY)
                        continue
                    }
                    transfer.configure(easy, share: share)
                    transfer.lastActivity = Self.monotonicNow()
                    active[easy] = transfer
                    curl_multi_add_handle(multi, easy)
                case .cancel(let transfer):
                    if let easy = transfer.easy, active.removeValue(forKey: easy) != nil {
                        curl_multi_remove_handle(multi, easy)
                        complete(transfer, CURLE_ABORTED_BY_CALLBACK)
                    } else {
                        transfer.cancelRequested = true  // overtook its own .add
                    }
                case .reportProgress(let transfer):
                    transfer.reportsProgress = true
                    if transfer.easy != nil { transfer.applyProgressOption() }
                case .stop:
                    running = false
                }
            }
            if !running { break }
            var stillRunning: Int32 = 0
            curl_multi_perform(multi, &stillRunning)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                if let transfer = active.removeValue(forKey: easy) {
                    curl_multi_remove_handle(multi, easy)
                    complete(transfer, code)
                }
            }
            endStalledTransfers()
            if commands.withLock({ !$0.isEmpty }) { continue }
            // While transfers run, wake often enough to end a stalled one within a quarter of a
            // second of its timeout.
            curl_multi_poll(multi, nil, 0, active.isEmpty ? 1000 : Int32(Self.stallCheckInterval * 1000), nil)
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi, easy)
            complete(transfer, CURLE_ABORTED_BY_CALLBACK)
        }
        active.removeAll()
        stopped.signal()
    }
}

/// The thread-safe share handle of one downloader's engines; destroyed after them.
final class CurlShare: @unchecked Sendable {
    // Invariant for @unchecked Sendable: immutable; curl locks the shared data itself.
    private let shared: OpaquePointer?
    let handle: UnsafeMutableRawPointer?

    init(cookies: Bool) {
        CurlEngine.initializeCurl()
        shared = ik_curl_share_create(cookies ? 1 : 0)
        handle = shared.map { ik_curl_share_handle($0) }
    }

    deinit { ik_curl_share_destroy(shared) }
}
