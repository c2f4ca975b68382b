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
    @Option(
        name: .customLong("urls"),
        help: ArgumentHelp(
            "A file of URLs, one per line (blank lines and lines starting with # are ignored).",
            valueName: "file")) var urlsFile: String?
    @Option(help: "The disk cache directory (default: the shared cache, ~/.cache/ImageKit/default).") var cacheDir:
        String?
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
        let prefetcher = ImagePrefetcher(
            manager: ImageManager(cache: cache), maxConcurrentPrefetchCount: concurrency,
            options: [.lowPriority, .waitStoreCache], context: context)
        let bar = ProgressLine(total: list.count, enabled: !json && isatty(STDERR_FILENO) != 0, style: .bar)
        let started = Date()
        let done = DispatchSemaphore(value: 0)
        let summary = SharedValue(ImagePrefetchSummary(totalCount: list.count, finishedCount: 0, skippedCount: 0))
        prefetcher.prefetch(
            list,
            progress: { progress in
                bar.finished(skipped: progress.error != nil)
            },
            completion: { result in
                summary.set(result)
                done.signal()
            })
        done.wait()
        bar.close()
        let result = summary.value
        let seconds = Date().timeIntervalSince(started)
        if json {
            printJSON([
                "total": result.totalCount, "finished": result.finishedCount, "skipped": result.skippedCount,
                "seconds": (seconds * 1000).rounded() / 1000,
            ])
        } else {
            print(
                String(
                    format: "prefetched %d of %d URLs (%d skipped) in %.2f s",
                    result.finishedCount - result.skippedCount,
                    result.totalCount, result.skippedCount, seconds))
        }
    }
}

/// A value behind a lock, for the command's callbacks.
final class SharedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value  // guarded by lock

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }

    func set(_ value: Value) { lock.withLock { stored = value } }
}
