import ArgumentParser
import Foundation
import ImageKit

struct Prefetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Warm the disk cache for a list of URLs through ImageKit's prefetcher.",
        discussion: """
            At most --concurrency loads run at once (default 3, low priority). A progress bar on stderr \
            (finished/total, rate, ETA) when stderr is a terminal; at the end one line, or with --json one \
            object with the keys total, finished, skipped and seconds. A URL that fails is skipped and \
            counted; the exit status is 0 all the same (2 for bad arguments).
            """
    )

    @Argument(help: "URLs to load (http, https, file, data).") var urls: [String] = []
    @Option(name: .customLong("urls"), help: ArgumentHelp("A file of URLs, one per line (blank lines and lines starting with # are ignored).",
                                                           valueName: "file")) var urlsFile: String?
    @Option(help: "The disk cache directory (default: the shared cache, ~/.cache/ImageKit/default).") var cacheDir: String?
    @Option(help: "Loads at once.") var concurrency = 3
    @Option(help: "Cache a thumbnail fitting N×N pixels (the original bytes are cached too).") var thumbnail: Int?
    @Flag(help: "Print the summary as one JSON object.") var json = false

    func validate() throws {
        if concurrency <= 0 { throw ValidationError("--concurrency must be positive") }
        if let thumbnail, thumbnail <= 0 { throw ValidationError("--thumbnail must be positive") }
        if urls.isEmpty && urlsFile == nil { throw ValidationError("give URLs or --urls FILE") }
    }

    func run() throws {
        var texts = urls
        if let urlsFile {
            let contents = String(decoding: try readFile(urlsFile), as: UTF8.self)
            texts += contents.split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        let list = try texts.map { text -> URL in
            guard let url = URL(string: text), url.scheme != nil else { throw ValidationError("not a URL: \(text)") }
            return url
        }
        let directory = cacheDir.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory(namespace: "default")
        let cache: ImageCache
        do { cache = try ImageCache(directory: directory) } catch {
            throw ValidationError("cannot open the cache in \(directory.path): \(error)")
        }
        var context = ImageLoadContext()
        context.thumbnailPixelSize = thumbnail.map { PixelSize($0) }
        // Nothing is shown from memory here: keep the decoded images out of it.
        context.storeCacheType = .disk
        let prefetcher = ImagePrefetcher(manager: ImageManager(cache: cache), maxConcurrentPrefetchCount: concurrency,
                                         options: [.lowPriority, .waitStoreCache], context: context)
        let bar = ProgressBar(total: list.count, enabled: !json && isatty(STDERR_FILENO) != 0)
        let started = Date()
        let done = DispatchSemaphore(value: 0)
        let summary = SharedValue(ImagePrefetchSummary(totalCount: list.count, finishedCount: 0, skippedCount: 0))
        prefetcher.prefetch(list, progress: { progress in
            bar.update(finished: progress.finishedCount, skipped: progress.skippedCount)
        }, completion: { result in
            summary.set(result)
            done.signal()
        })
        done.wait()
        bar.close()
        let result = summary.value
        let seconds = Date().timeIntervalSince(started)
        if json {
            printJSON(["total": result.totalCount, "finished": result.finishedCount, "skipped": result.skippedCount,
                       "seconds": (seconds * 1000).rounded() / 1000])
        } else {
            print(String(format: "prefetched %d of %d URLs (%d skipped) in %.2f s", result.finishedCount - result.skippedCount,
                         result.totalCount, result.skippedCount, seconds))
        }
    }
}

/// A value behind a lock, for the command's callbacks.
final class SharedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value // guarded by lock

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }

    func set(_ value: Value) { lock.withLock { stored = value } }
}

/// "[#####-----] finished/total  rate/s  ETA" redrawn on stderr when it is a terminal.
final class ProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let total: Int
    private let enabled: Bool
    private let started = Date()
    private var lastDraw = Date.distantPast // guarded by lock
    private var drawn = false // guarded by lock

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func update(finished: Int, skipped: Int) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = Date()
        guard finished == total || now.timeIntervalSince(lastDraw) > 0.1 else { return }
        lastDraw = now
        drawn = true
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let rate = Double(finished) / elapsed
        let width = 24
        let filled = total == 0 ? width : width * finished / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let eta = rate > 0 ? String(format: "ETA %.0f s", Double(total - finished) / rate) : "ETA --"
        let skippedText = skipped > 0 ? "  \(skipped) skipped" : ""
        let line = "\r[\(bar)] \(finished)/\(total)  " + String(format: "%.1f/s  ", rate) + eta + skippedText + "   "
        FileHandle.standardError.write(Data(line.utf8))
    }

    func close() {
        guard enabled, lock.withLock({ drawn }) else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
