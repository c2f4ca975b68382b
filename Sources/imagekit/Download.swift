import ArgumentParser
import Foundation
import ImageKit

struct Download: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download URLs with ImageKit's curl downloader.",
        discussion:
            "Shows a progress line on a terminal (files done, bytes, rate); --json prints one line per URL with url, status, bytes, httpVersion, timings and error. Exits 1 when any URL failed."
    )

    @Argument(help: "URLs to download.") var urls: [String]
    @Option(help: "Save the bodies into this directory.") var out: String?
    @Option(help: "Transfers at once.") var concurrency: Int = 6
    @Option(name: .customLong("header"), help: "An extra request header, 'Name: value' (repeatable).") var headers:
        [String] = []
    @Flag(help: "Accept any TLS certificate.") var insecure = false
    @Option(help: "Stall timeout in seconds.") var timeout: Double = 15
    @Flag(help: "Print one JSON object per URL.") var json = false

    func validate() throws {
        guard concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
        for header in headers where !header.contains(":") {
            throw ValidationError("--header takes 'Name: value', got '\(header)'")
        }
    }

    func run() throws {
        // As many connections per host as transfers: the usual case is many URLs on one host.
        var configuration = ImageDownloaderConfiguration(
            maxConcurrentDownloads: concurrency, timeout: timeout,
            allowsInvalidSSLCertificates: insecure, maxConnectionsPerHost: concurrency)
        for header in headers {
            let parts = header.split(separator: ":", maxSplits: 1)
            configuration.headers[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(
                in: .whitespaces)
        }
        if let out { try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true) }
        let downloader = ImageDownloader(configuration: configuration)
        let progress = ProgressLine(total: urls.count, enabled: !json && isatty(STDERR_FILENO) != 0)
        let group = DispatchGroup()
        let failures = Counter()
        for (index, text) in urls.enumerated() {
            guard let url = URL(string: text), url.scheme != nil else {
                failures.add()
                report(url: text, response: nil, error: ImageError(.invalidURL, "not a URL: \(text)"))
                continue
            }
            group.enter()
            downloader.download(
                ImageLoadRequest(url: url),
                progress: { update in
                    progress.bytes(for: index, update.receivedBytes)
                }
            ) { result in
                switch result {
                case .success(let response):
                    if let out {
                        let name = Self.fileName(for: url, index: index)
                        do { try response.data.write(to: URL(fileURLWithPath: out).appendingPathComponent(name)) } catch
                        {
                            failures.add()
                            report(
                                url: text, response: response,
                                error: ImageError(.ioError, "cannot write \(name): \(error)"))
                            break
                        }
                    }
                    report(url: text, response: response, error: nil)
                case .failure(let error):
                    failures.add()
                    report(url: text, response: nil, error: error)
                }
                progress.finished()
                group.leave()
            }
        }
        group.wait()
        progress.close()
        if failures.value > 0 { throw ExitCode(1) }
    }

    static func fileName(for url: URL, index: Int) -> String {
        let last = url.lastPathComponent
        let safe = last.isEmpty || last == "/" ? "download" : last
        return "\(index)-\(safe)"
    }

    private func report(url: String, response: ImageLoadResponse?, error: ImageError?) {
        if json {
            var object: [String: Any] = [
                "url": url, "status": response?.statusCode ?? error?.httpStatusCode ?? 0,
                "bytes": response?.data.count ?? 0,
                "httpVersion": response?.metrics.httpVersion ?? "",
            ]
            if let metrics = response?.metrics {
                object["timings"] = [
                    "nameLookup": metrics.nameLookup, "connect": metrics.connect, "tls": metrics.tlsHandshake,
                    "firstByte": metrics.timeToFirstByte, "total": metrics.total,
                ]
            } else {
                object["timings"] = [String: Double]()
            }
            object["error"] =
                error.map { ["code": $0.code.rawValue, "message": $0.message] as [String: Any] } ?? NSNull()
            printJSON(object)
        } else if let error {
            FileHandle.standardError.write(Data("\(url): \(error)\n".utf8))
        } else if let response, isatty(STDERR_FILENO) == 0 {
            print(
                "\(url): HTTP \(response.statusCode), \(response.data.count) bytes, \(String(format: "%.3f", response.metrics.total)) s"
            )
        }
    }
}

/// A thread-safe count.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0  // guarded by lock
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

/// A progress line redrawn on stderr when it is a terminal: "[done/total] bytes rate" for
/// downloads, or a bar with done/total, items per second, ETA and skipped items.
final class ProgressLine: @unchecked Sendable {
    enum Style { case bytes, bar }

    // Guarded by lock.
    private let lock = NSLock()
    private let total: Int
    private let enabled: Bool
    private let style: Style
    private var done = 0
    private var skipped = 0
    private var received: [Int: Int64] = [:]
    private let started = Date()
    private var lastDraw = Date.distantPast
    private var drawn = false
    /// Nothing is drawn before this many seconds have passed (short runs stay quiet).
    private let showsAfter: TimeInterval

    init(total: Int, enabled: Bool, showsAfter: TimeInterval = 0, style: Style = .bytes) {
        self.total = total
        self.enabled = enabled
        self.showsAfter = showsAfter
        self.style = style
    }

    func bytes(for index: Int, _ count: Int64) {
        lock.lock(); received[index] = count; lock.unlock()
        draw(force: false)
    }

    func finished(skipped isSkipped: Bool = false) {
        lock.lock(); done += 1; if isSkipped { skipped += 1 }; let last = done == total; lock.unlock()
        // Downloads redraw on every completion; the bar (many quick items) at most every 0.1 s.
        draw(force: style == .bytes || last)
    }

    func close() {
        guard enabled, lock.withLock({ drawn }) else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func draw(force: Bool) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = Date()
        guard now.timeIntervalSince(started) >= showsAfter, force || now.timeIntervalSince(lastDraw) > 0.1 else {
            return
        }
        lastDraw = now
        drawn = true
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let line: String
        switch style {
        case .bytes:
            let bytes = received.values.reduce(0, +)
            line = String(
                format: "\r[%d/%d] %.1f MB  %.1f MB/s   ", done, total, Double(bytes) / 1e6,
                Double(bytes) / elapsed / 1e6)
        case .bar:
            let rate = Double(done) / elapsed
            let width = 24
            let filled = total == 0 ? width : width * done / total
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let eta = rate > 0 ? String(format: "ETA %.0f s", Double(total - done) / rate) : "ETA --"
            line =
                "\r[\(bar)] \(done)/\(total)  " + String(format: "%.1f/s  ", rate) + eta
                + (skipped > 0 ? "  \(skipped) skipped" : "") + "   "
        }
        FileHandle.standardError.write(Data(line.utf8))
    }
}
