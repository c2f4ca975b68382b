import Foundation

// Spec: OPT-00 … OPT-23.
/// Flags of one load (SDWebImage 5's `SDWebImageOptions`, same bit numbers).
///
/// Flags that only mean something to Apple's UI or app life cycle are accepted and documented
/// with what they do here instead.
public struct ImageLoadOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    // Spec: OPT-00.
    /// Ignore the failed-URL list: load a URL that failed permanently before; a success removes
    /// it from the list.
    public static let retryFailed = ImageLoadOptions(rawValue: 1 << 0)
    // Spec: OPT-01.
    /// Queue the download behind normal ones.
    public static let lowPriority = ImageLoadOptions(rawValue: 1 << 1)
    // Spec: OPT-02.
    /// Deliver previews while the bytes arrive, at most one per 0.1 s. Previews are
    /// never cached.
    public static let progressiveLoad = ImageLoadOptions(rawValue: 1 << 2)
    // Spec: OPT-03, MGR-12.
    /// Deliver the cached image, then revalidate it with the server (If-None-Match /
    /// If-Modified-Since). A 304 refreshes the entry's metadata and delivers nothing more; new
    /// bytes replace the entry and are delivered as a second result.
    public static let refreshCached = ImageLoadOptions(rawValue: 1 << 3)
    /// iOS background time. No app life cycle on Linux: loads always run to the end; ignored.
    public static let continueInBackground = ImageLoadOptions(rawValue: 1 << 4)
    // Spec: OPT-05.
    /// Turn curl's cookie engine on for this download. Cookies persist across
    /// downloads when the downloader's configuration has `handlesCookies`.
    public static let handleCookies = ImageLoadOptions(rawValue: 1 << 5)
    // Spec: OPT-06.
    /// Accept any TLS certificate for this download; for tests and self-signed servers.
    public static let allowInvalidSSLCertificates = ImageLoadOptions(rawValue: 1 << 6)
    // Spec: OPT-07.
    /// Queue the download before normal ones.
    public static let highPriority = ImageLoadOptions(rawValue: 1 << 7)
    // Spec: OPT-08.
    /// A target-layer flag (placeholder only on failure); the manager ignores it.
    public static let delayPlaceholder = ImageLoadOptions(rawValue: 1 << 8)
    // Spec: OPT-09.
    /// Transform animated images too; by default they are delivered untransformed.
    public static let transformAnimatedImage = ImageLoadOptions(rawValue: 1 << 9)
    // Spec: OPT-10.
    /// A target-layer flag (the caller sets the image itself); the manager ignores it.
    public static let avoidAutoSetImage = ImageLoadOptions(rawValue: 1 << 10)
    // Spec: OPT-11.
    /// Decode large images scaled down to at most 60 MiB of RGBA (≈ 3966 × 3966), or the
    /// context's ``ImageLoadContext/scaleDownLimitBytes``. Part of the cache key.
    public static let scaleDownLargeImages = ImageLoadOptions(rawValue: 1 << 11)
    // Spec: OPT-12.
    /// On a memory hit, also read the original bytes from disk into the result.
    public static let queryMemoryData = ImageLoadOptions(rawValue: 1 << 12)
    // Spec: OPT-13.
    /// With ``queryMemoryData``, read those bytes before `loadImage` returns.
    public static let queryMemoryDataSync = ImageLoadOptions(rawValue: 1 << 13)
    // Spec: OPT-14.
    /// On a memory miss, read and decode the disk entry on the calling thread, so a disk hit
    /// also completes before `loadImage` returns.
    public static let queryDiskDataSync = ImageLoadOptions(rawValue: 1 << 14)
    // Spec: OPT-15.
    /// Never use the loader: a cache miss completes with no image and no error.
    public static let fromCacheOnly = ImageLoadOptions(rawValue: 1 << 15)
    // Spec: OPT-16.
    /// Skip the cache query and load; the result is still stored.
    public static let fromLoaderOnly = ImageLoadOptions(rawValue: 1 << 16)
    // Spec: OPT-17.
    /// A view-transition hint; no effect in the manager.
    public static let forceTransition = ImageLoadOptions(rawValue: 1 << 17)
    // Spec: OPT-18, DESIGN §6.
    /// Do not decode: the result carries the encoded bytes (``ImageLoadResult/data``) and what
    /// the signature tells (format, animation), no pixels.
    public static let avoidDecodeImage = ImageLoadOptions(rawValue: 1 << 18)
    // Spec: OPT-19, CQS-05.
    /// Decode only the first frame of an animation; a cached animation is returned as a still
    /// copy of its first frame.
    public static let decodeFirstFrameOnly = ImageLoadOptions(rawValue: 1 << 19)
    // Spec: OPT-20.
    /// Decode every frame of an animation up front: the image's ``DecodedImage/frames`` hold
    /// them all (frames × canvas bytes, checked against the decode limits as a whole). Without
    /// it an animation is delivered lazy — its bytes and first frame, the other frames decoded
    /// on demand (``DecodedImage/animation``; the limits apply to one canvas) — unless a
    /// transformer with ``transformAnimatedImage`` needs the frames. A lazy image cached in
    /// memory is decoded whole on delivery to a load with this flag.
    public static let preloadAllFrames = ImageLoadOptions(rawValue: 1 << 20)
    // Spec: OPT-21.
    /// ImageKit has one image type (``DecodedImage``), so every result matches; ignored.
    public static let matchAnimatedImageClass = ImageLoadOptions(rawValue: 1 << 21)
    // Spec: OPT-22.
    /// Complete only after the memory and disk stores have finished; a failed store is then
    /// reported in ``ImageLoadResult/storeError``.
    public static let waitStoreCache = ImageLoadOptions(rawValue: 1 << 22)
    // Spec: OPT-23.
    /// No vector decoder here (PDF and SVG are `unsupportedFormat`); accepted, inert.
    public static let transformVectorImage = ImageLoadOptions(rawValue: 1 << 23)
    /// ImageKit: revalidate a disk hit whose stored Cache-Control / Expires says it is stale
    /// (as ``refreshCached`` does, but only for stale entries). Off unless given.
    public static let revalidateStaleEntries = ImageLoadOptions(rawValue: 1 << 24)
    /// ImageKit: finish a thumbnail load of a progressive JPEG as soon as its DC scans have
    /// arrived, and cancel the rest of the transfer.
    ///
    /// With a ``ImageLoadContext/thumbnailPixelSize`` at most 1/8 of the image (the same rule as
    /// the decoder's DC-only path), the first scans of a progressive JPEG — in libjpeg's default
    /// script, typically the first 5–15 % of the file — already hold every pixel of the
    /// thumbnail: within 2 levels of what the whole file gives (the DC bits still missing,
    /// reconstructed at the middle of their range). The manager then decodes, caches and
    /// delivers the thumbnail and cancels the download. The bytes received are **not stored**
    /// (there is no original on disk or in memory afterwards; the thumbnail itself is cached as
    /// usual), and ``ImageLoadResult/data`` holds only the prefix. Loads of anything else (a
    /// baseline JPEG, another format, a larger thumbnail, a file whose first scans are too
    /// coarse) run to the end as if the flag were absent.
    ///
    /// ```swift
    /// let context = ImageLoadContext(thumbnailPixelSize: PixelSize(256))
    /// let result = try await manager.loadImage(url, options: .thumbnailFromFirstScans, context: context)
    /// ```
    public static let thumbnailFromFirstScans = ImageLoadOptions(rawValue: 1 << 25)
}
