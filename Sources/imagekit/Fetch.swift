import ArgumentParser
import Foundation
import ImageKit

struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load images by URL through ImageKit's manager: memory, disk cache, network, decode.",
        discussion: """
            One manager per invocation, with its disk cache in --cache-dir. --json prints one object per URL \
            with url, cacheType (none|memory|disk), format, width, height, frames, bytes, status (the HTTP \
            status of a network load, 304 after a revalidation, null from a cache) and error (null or {code, \
            message}; a URL on the failed-URL list has the code 'blacklisted', a --from-cache-only miss \
            'notCached', an address refused by --deny-private 'forbiddenAddress'). Exits 1 when any URL \
            failed or was not cached.
            """
    )

    @Argument(help: "URLs to load (http, https, file, data).") var urls: [String]
    @Option(help: "The disk cache directory (default: the shared cache, ~/.cache/ImageKit/default).") var cacheDir:
        String?
    @Option(help: "Decode as a thumbnail fitting N×N pixels (cached apart from the original).") var thumbnail: Int?
    @Flag(help: "Revalidate cached images with the server (conditional requests).") var refresh = false
    @Flag(help: "Load URLs that failed permanently before.") var retryFailed = false
    @Flag(help: "Never use the network: a cache miss is reported as such.") var fromCacheOnly = false
    @Flag(help: "Load one URL after the other (default: all at once).") var sequential = false
    @Option(help: "Save each image as PNG into this directory.") var out: String?
    @Flag(help: "Print one JSON object per URL.") var json = false
    @Flag(
        help:
            "Refuse to connect to loopback, private, link-local, multicast and reserved addresses, after DNS and on every redirect (for URLs from untrusted input)."
    )
    var denyPrivate = false
    @Option(
        name: .customLong("allow-address"),
        help: "With --deny-private: a CIDR (or address) that is allowed all the same; repeatable.")
    var allowedAddresses: [String] = []
    @Option(
        name: .customLong("allow-host"),
        help: "With --deny-private: a host name (or *.domain) that is allowed whatever it resolves to; repeatable.")
    var allowedHosts: [String] = []
    @Option(
        name: .customLong("resolve"),
        help: "Resolve HOST:PORT to ADDRESS, as curl's --resolve HOST:PORT:ADDRESS; repeatable.")
    var resolve: [String] = []

    func validate() throws {
        if let thumbnail, thumbnail <= 0 { throw ValidationError("--thumbnail must be positive") }
        for cidr in allowedAddresses where IPNetwork(cidr) == nil {
            throw ValidationError("--allow-address: '\(cidr)' is not an address or CIDR")
        }
        if !denyPrivate && !(allowedAddresses.isEmpty && allowedHosts.isEmpty) {
            throw ValidationError("--allow-address and --allow-host go with --deny-private")
        }
    }

    func run() throws {
        let directory = cacheDir.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory(namespace: "default")
        let cache: ImageCache
        do { cache = try ImageCache(directory: directory) } catch {
            throw ValidationError("cannot open the cache in \(directory.path): \(error)")
        }
        if let out { try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true) }
        var downloads = ImageDownloaderConfiguration()
        if denyPrivate {
            downloads.addressPolicy = AddressPolicy.publicOnly.allowing(networks: allowedAddresses, hosts: allowedHosts)
        }
        downloads.hostOverrides = resolve
        let loader = ImageLoadersManager(loaders: [
            ImageDownloader(configuration: downloads), FileLoader(), DataURLLoader(),
        ])
        let manager = ImageManager(cache: cache, loader: loader)
        var options: ImageLoadOptions = [.waitStoreCache]  // the process may exit right after
        if refresh { options.insert(.refreshCached) }
        if retryFailed { options.insert(.retryFailed) }
        if fromCacheOnly { options.insert(.fromCacheOnly) }
        var context = ImageLoadContext()
        context.thumbnailPixelSize = thumbnail.map { PixelSize($0) }
        let progress = ProgressLine(total: urls.count, enabled: !json && isatty(STDERR_FILENO) != 0, showsAfter: 1)
        let failures = Counter()
        let urls = self.urls
        let done = DispatchSemaphore(value: 0)
        Task { [self, options, context] in
            if sequential {
                for (index, text) in urls.enumerated() {
                    await fetch(
                        text, index: index, manager: manager, options: options, context: context, progress: progress,
                        failures: failures)
                }
            } else {
                await withTaskGroup(of: Void.self) { group in
                    for (index, text) in urls.enumerated() {
                        group.addTask {
                            await fetch(
                                text, index: index, manager: manager, options: options, context: context,
                                progress: progress, failures: failures)
                        }
                    }
                }
            }
            done.signal()
        }
        done.wait()
        progress.close()
        if failures.value > 0 { throw ExitCode(1) }
    }

    /// One URL through the manager's event stream: the last result, and 304 when a
    /// revalidation found the cached copy current.
    private func fetch(
        _ text: String, index: Int, manager: ImageManager, options: ImageLoadOptions, context: ImageLoadContext,
        progress: ProgressLine, failures: Counter
    ) async {
        var result: ImageLoadResult?
        var status: Int?
        var failure: ImageError?
        do {
            for try await event in manager.imageEvents(for: URL(string: text), options: options, context: context) {
                switch event {
                case .progress(let update): progress.bytes(for: index, update.receivedBytes)
                case .preview: break
                case .result(let loaded):
                    result = loaded
                    status = loaded.statusCode
                case .notModified: status = 304
                }
            }
        } catch {
            failure = error as? ImageError ?? ImageError(.internalError, "\(error)")
        }
        progress.finished()
        if failure == nil, result?.image == nil {
            failure =
                fromCacheOnly
                ? ImageError(.notCached, "\(text) is not in the cache") : ImageError(.badImageData, "no image")
        }
        if let image = result?.image, let out, failure == nil {
            let name = Download.fileName(for: URL(string: text) ?? URL(fileURLWithPath: "image"), index: index) + ".png"
            do {
                try ImageCodersManager.shared.encode(image, as: .png, options: .default)
                    .write(to: URL(fileURLWithPath: out).appendingPathComponent(name))
            } catch {
                failure = ImageError(.ioError, "cannot write \(name): \(error)")
            }
        }
        if failure != nil { failures.add() }
        report(text, result: result, status: status, error: failure)
    }

    private func report(_ url: String, result: ImageLoadResult?, status: Int?, error: ImageError?) {
        let image = result?.image
        if json {
            let cacheType: String
            switch result?.cacheType {
            case .memory?: cacheType = "memory"
            case .disk?: cacheType = "disk"
            default: cacheType = "none"
            }
            let object: [String: Any] = [
                "url": url, "cacheType": cacheType,
                "format": result.map { "\($0.format)" } ?? NSNull(),
                "width": image?.width ?? NSNull(), "height": image?.height ?? NSNull(),
                "frames": image?.frameCount ?? NSNull(), "bytes": result?.data?.count ?? NSNull(),
                "status": status ?? error?.httpStatusCode ?? NSNull() as Any,
                "error": error.map { ["code": $0.code.rawValue, "message": $0.message] as [String: Any] } ?? NSNull(),
            ]
            printJSON(object)
        } else if let error {
            FileHandle.standardError.write(Data("\(url): \(error)\n".utf8))
        } else if let result {
            let size = image.map { "\($0.width)x\($0.height), \($0.frameCount) frame(s)" } ?? "not cached"
            let source = status.map { "HTTP \($0)" } ?? "\(result.cacheType) cache"
            print("\(url): \(result.format) \(size) from \(source)")
        }
    }
}
