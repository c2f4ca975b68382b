import Foundation
import Logging

/// Settings of an ``ImageManager`` beyond its components.
public struct ImageManagerConfiguration: Sendable {
    /// How long a permanently failed URL stays on the failed-URL list: 300 s by default, so an
    /// image published after a first 404 shows up within minutes in a long-running server
    /// while a missing image is not asked for again on every load. nil: until
    /// ``ImageManager/removeFailedURL(_:)``, a successful ``ImageLoadOptions/retryFailed``
    /// load, or the end of the process (SDWebImage's behaviour, for short-lived apps).
    public var failedURLTimeToLive: TimeInterval?
    /// Decodes and transforms running at once (default: the number of cores).
    public var decodeConcurrency: Int
    /// Where completion handlers, progress and previews are called unless a load's context
    /// names another queue. Default: a serial queue the manager owns (`DispatchQueue.main`
    /// works only where the application runs a main loop, so it is opt-in).
    public var callbackQueue: DispatchQueue
    /// Vetoes a download on a cache miss (SDWebImage's delegate `shouldDownloadImageForURL`):
    /// the load then completes with no image and no error.
    public var shouldDownload: (@Sendable (URL) -> Bool)?
    /// Decides whether a failure puts the URL on the failed-URL list. Default: only failures
    /// that are the URL's own — HTTP 4xx other than 408 and 429 from the loader, and complete
    /// bytes that no decoder can read (`badImageData`, `unsupportedFormat`, `emptyData`). Never
    /// a transformer's error, a limit of one load (`decompressionBomb`, `responseTooLarge`),
    /// timeouts, DNS, connection or TLS failures, the address policy, 5xx or cancellation:
    /// ``ImageManager/blocksURL(after:at:)``.
    public var shouldBlockFailedURL: (@Sendable (URL, ImageError) -> Bool)?
    /// Told about every failed cache store (full or read-only disk …). The image is delivered
    /// all the same; with ``ImageLoadOptions/waitStoreCache`` the result carries the error too.
    public var storeErrorHandler: (@Sendable (ImageError, CacheKey) -> Void)?
    /// Where loads are logged and counted (``ImageKitTelemetry``); also given to the cache and
    /// downloader the manager makes when none is passed to it.
    public var telemetry = ImageKitTelemetry()

    /// A configuration; every parameter has the default documented on its property.
    public init(
        failedURLTimeToLive: TimeInterval? = 300,
        decodeConcurrency: Int = ProcessInfo.processInfo.activeProcessorCount,
        callbackQueue: DispatchQueue = DispatchQueue(label: "ImageKit.ImageManager.callbacks"),
        shouldDownload: (@Sendable (URL) -> Bool)? = nil,
        shouldBlockFailedURL: (@Sendable (URL, ImageError) -> Bool)? = nil,
        storeErrorHandler: (@Sendable (ImageError, CacheKey) -> Void)? = nil
    ) {
        self.failedURLTimeToLive = failedURLTimeToLive
        self.decodeConcurrency = decodeConcurrency
        self.callbackQueue = callbackQueue
        self.shouldDownload = shouldDownload
        self.shouldBlockFailedURL = shouldBlockFailedURL
        self.storeErrorHandler = storeErrorHandler
    }
}
