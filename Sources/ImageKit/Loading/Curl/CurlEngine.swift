import CCurl
import CImageCodecs
import Foundation

/// One `CURLM` driven by one dedicated thread: the only thread that touches curl handles.
/// Other threads send commands and wake it with `curl_multi_wakeup`.
final class CurlEngine: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `multi` and `active` are used only on the engine
    // thread (after init); `commands` is locked; `curl_multi_wakeup` is thread-safe.
    private let multi: UnsafeMutableRawPointer
    private let commands = Locked<[Command]>([])
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private let stopped = DispatchSemaphore(value: 0)

    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        case stop
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    init(maxHostConnections: Int, maxTotalConnections: Int) {
        _ = Self.globalInit
        multi = curl_multi_init()
        let raw = multi
        _ = ik_curl_multi_setopt_long(raw, Int32(CURLMOPT_PIPELINING.rawValue), Int(CURLPIPE_MULTIPLEX))
        _ = ik_curl_multi_setopt_long(raw, Int32(CURLMOPT_MAX_HOST_CONNECTIONS.rawValue), maxHostConnections)
        _ = ik_curl_multi_setopt_long(raw, Int32(CURLMOPT_MAX_TOTAL_CONNECTIONS.rawValue), maxTotalConnections)
        let thread = Thread { [self] in run() }
        thread.name = "ImageKit.curl"
        thread.start()
    }

    func send(_ command: Command) {
        commands.withLock { $0.append(command) }
        curl_multi_wakeup(multi)
    }

    /// Stops the thread: every transfer still running completes with `cancelled`. Waits for it.
    func shutdown() {
        send(.stop)
        stopped.wait()
        curl_multi_cleanup(multi)
    }

    /// Reports the end of a transfer once, then drops its callbacks: they capture the
    /// downloader's operation, which holds the transfer (a cycle that would keep every body).
    private func complete(_ transfer: CurlTransfer, _ code: CURLcode) {
        let onComplete = transfer.onComplete
        transfer.onComplete = nil
        transfer.onProgress = nil
        onComplete?(transfer, code)
    }

    private func run() {
        var running = true
        while running {
            for command in commands.withLock({ commands in defer { commands.removeAll() }; return commands }) {
                switch command {
                case .add(let transfer):
                    transfer.configure()
                    active[transfer.easy] = transfer
                    curl_multi_add_handle(multi, transfer.easy)
                case .cancel(let transfer):
                    if active.removeValue(forKey: transfer.easy) != nil {
                        curl_multi_remove_handle(multi, transfer.easy)
                        complete(transfer, CURLE_ABORTED_BY_CALLBACK)
                    }
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
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi, easy)
            complete(transfer, CURLE_ABORTED_BY_CALLBACK)
        }
        active.removeAll()
        stopped.signal()
    }
}
