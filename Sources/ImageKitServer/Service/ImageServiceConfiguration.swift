import Foundation
import ImageKit

/// Everything `imagekit serve` is configured with, and its defaults.
///
/// ```swift
/// var configuration = ImageServiceConfiguration()
/// configuration.thumborKeys = ["MY_SECURE_KEY"]
/// configuration.allowedSources = ["*.example.com"]
/// let service = try ImageService(configuration: configuration)
/// ```
public struct ImageServiceConfiguration: Sendable {
    /// thumbor `SECURITY_KEY`s; the first signs, any verifies (rotation).
    public var thumborKeys: [String] = []
    /// imgproxy key/salt pairs (hex).
    public var imgproxyKeys: [(key: String, salt: String)] = []
    /// Also accept unsigned URLs (thumbor `unsafe`, imgproxy `insecure` and `_`).
    public var allowsUnsafe = false
    /// Source hosts served (`*.example.com` globs); empty: any.
    public var allowedSources: [String] = []
    /// Networks exempt from the private-address guard (CIDR); the guard itself is always on.
    public var allowedNetworks: [String] = []
    /// The largest source accepted (64 MiB): larger answers 413.
    public var maxSourceBytes = 64 << 20
    /// The most pixels a source may have (50 M, imgproxy's): more answers 422.
    public var maxPixels = 50_000_000
    /// One deadline for fetching a source (10 s): connection, redirects, body and retries
    /// together; a retry starts only while time is left. Past it, 504.
    public var timeout: TimeInterval = 10
    /// Redirects followed at most (10); each hop is checked by the address policy.
    public var maxRedirects = 10
    /// Decodes, transforms and encodes at once (the core count); requests beyond wait.
    public var workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Requests that may wait for a worker (``defaultQueueLimit``, whatever the worker count),
    /// counted from before their source is fetched; beyond, 503 with `Retry-After`, the origin
    /// not asked. A waiting request costs a connection and then its source's bytes, so the
    /// default absorbs a page of thumbnails on a cold cache and still refuses a flood.
    public var queueLimit = ImageServiceConfiguration.defaultQueueLimit
    /// 128: a waiting request holds its client's connection, an origin connection while it
    /// fetches, then the source's bytes (typically 0.1–3 MB, at most ``maxSourceBytes``). 128 of
    /// them take about 256 file descriptors (a quarter of the common 1024 soft limit) and tens of
    /// megabytes; a page's burst (24–100 images at once) waits instead of being refused.
    public static let defaultQueueLimit = 128
    /// `Cache-Control: max-age` of an image (1 year); thumbor `max_age()` and imgproxy `exp` lower it.
    public var maxAge = 365 * 86_400
    /// imgproxy presets by name, each a list of options (`--preset NAME=rs:fit:300:300/q:80`).
    public var presets: [String: [String]] = [:]
    /// Answer WebP to clients whose `Accept` lists `image/webp` when no format is asked (on).
    public var autoWebP = true
    /// Answer AVIF to clients whose `Accept` lists `image/avif` first (off: ~10× the CPU of JPEG).
    public var autoAVIF = false
    /// Where sources and results are cached on disk; nil: memory only.
    public var cacheDirectory: URL?
    /// Bytes of results kept in memory (64 MiB).
    public var resultMemoryBytes = 64 << 20
    /// Bytes of disk for sources (three quarters) and results (a quarter); nil: a tenth of the
    /// free space when the cache opens, 64 MiB–1 GiB each (ImageKit's automatic bound).
    public var diskLimitBytes: Int?
    /// How long a result is answered from the result cache without looking at its source (1 h).
    /// After that the source is loaded again — from the source cache on disk when it holds it (a
    /// stored source is not asked of the origin again: it stays until the disk limit evicts it or
    /// it is 7 days old), else from the origin; if its bytes are unchanged the result stands for
    /// another period.
    public var resultTimeToLive: TimeInterval = 3600
    /// Where a video source's frame is taken when the request does not say (imgproxy's `vts`,
    /// thumbor's `still(N)`), in seconds: 1, imgproxy's default. Video sources need the `Video`
    /// trait.
    public var videoThumbnailSecond: Double = 1
    /// Client hints (`Sec-CH-DPR`/`DPR`, `Sec-CH-Width`/`Width`, `Sec-CH-Viewport-Width`) give an
    /// imgproxy URL its DPR and width when it sets none (imgproxy's
    /// `IMGPROXY_ENABLE_CLIENT_HINTS`); responses then name them in `Vary` and ask for them with
    /// `Accept-CH`. Off by default: hints are not signed, so a client can ask for sizes the URL
    /// did not.
    public var clientHints = false
    /// URLs that ask no format are answered in the `best` format (`--best-format`): the smallest
    /// of ``bestFormats`` that the client's `Accept` allows.
    public var bestFormatByDefault = false
    /// The formats `best` may answer in (JPEG, PNG, GIF, WebP, AVIF by default; WebP and AVIF only
    /// when `Accept` lists them).
    public var bestFormats: [ImageOperations.Format] = [.jpeg, .png, .gif, .webp, .avif]
    /// The quality chosen per image (`--autoquality`; imgproxy's `IMGPROXY_AUTOQUALITY_*`): off
    /// unless set; a URL's `aq:` option asks it per request either way.
    public var autoQuality = AutoQualityDefaults()
    /// Access to `s3://BUCKET/KEY` sources (AWS Signature V4); nil: `s3` sources answer 400
    /// (an unsupported scheme).
    /// Its `buckets` is the allow-list (``allowedSources`` names hosts, not buckets).
    public var s3: S3Access?
    /// The directory `local:///PATH` sources are read from (imgproxy's `local://`); nil: `local`
    /// sources answer 400 (an unsupported scheme). No path leaves it (see `LocalRootLoader`); a changed file is a new
    /// version at once (local sources are not kept in the source cache).
    public var localRoot: URL?
    /// The key `POST /admin/purge` must present (`Authorization: Bearer KEY`); nil: no admin
    /// route (404). See ``ImageService/purge(body:query:authorization:)``.
    public var adminKey: String?
    /// Send `Surrogate-Key` and `Cache-Tag` with every image, naming its source (the `tag` a
    /// purge answers), so a CDN (Fastly, Cloudflare) purges every variant of a source by one tag.
    /// Off by default: two headers on every response.
    public var sendsSourceTags = false
    /// Front caches to purge with a source (`--purge-notify`): each fleet nginx's purge location
    /// (`http://127.0.0.1:8080/imagekit-purge-key`). The node remembers the keys it answered per
    /// source and asks each to drop them after a purge.
    public var purgeNotify: [URL] = []
    /// Sources whose addresses resolve by `CURLOPT_RESOLVE` rules (tests; `HOST:PORT:ADDRESS`).
    public var hostOverrides: [String] = []

    /// The defaults documented on each property (no key: set one, or `allowsUnsafe`).
    public init() {}
}

extension ImageServiceConfiguration {
    /// The loaders sources are read with, one per scheme this configuration serves: the web
    /// through `downloader` (its address policy, deadline, limits and allowed hosts), a bucket
    /// store and a local root when configured. A new scheme is a ``SourceLoading`` type and a
    /// line here.
    func sourceLoaders(through downloader: ImageDownloader) -> [any SourceLoading] {
        var loaders: [any SourceLoading] = [downloader]
        if let s3 { loaders.append(S3Loader(access: s3, downloader: downloader)) }
        if let localRoot { loaders.append(LocalRootLoader(root: localRoot, maxBytes: maxSourceBytes)) }
        return loaders
    }
}
