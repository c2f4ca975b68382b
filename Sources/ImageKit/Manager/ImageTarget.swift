import Foundation

// Spec: VIEW-01.
/// Anything that shows one image at a time and is filled by
/// ``ImageManager/loadImage(into:url:placeholder:options:context:operationKey:progress:completion:)``:
/// a widget wrapper, a terminal cell, a server-side slot (SDWebImage's view categories,
/// made target-agnostic).
///
/// The layer calls these methods on the load's callback queue (the context's, else the
/// manager's), in order, and never after the target is deallocated. A target that lives on the
/// main actor passes `DispatchQueue.main` as the context's callback queue — with a main loop
/// running, that queue is the main actor's executor — and hops in with `assumeIsolated`:
///
/// ```swift
/// @MainActor final class Thumbnail: ImageTarget {
///     var picture: DecodedImage?
///     nonisolated func setImage(_ image: DecodedImage?, data: Data?, cacheType: ImageCacheType,
///                               url: URL?, animated: Bool) {
///         MainActor.assumeIsolated { picture = image }
///     }
/// }
///
/// var context = ImageLoadContext()
/// context.callbackQueue = .main
/// manager.loadImage(into: thumbnail, url: url, placeholder: grey, context: context)
/// ```
public protocol ImageTarget: AnyObject, Sendable {
    // Spec: VIEW-08.
    /// Shows `image`: the placeholder (`data` nil, `cacheType` `.none`), a progressive preview,
    /// or the loaded image with its original bytes when the load had them.
    ///
    /// - Parameters:
    ///   - animated: whether a transition suits this change: true for images
    ///     from the network and asynchronous disk hits, false for memory hits, synchronous disk
    ///     hits, previews and placeholders set at the start; always true with
    ///   - image: the image to show.
    ///   - data: its original bytes, when the load had them.
    ///   - url: the URL being loaded.
    ///   - cacheType: where the image came from.
    ///   ``ImageLoadOptions/forceTransition`` for a finished load.
    func setImage(_ image: DecodedImage?, data: Data?, cacheType: ImageCacheType, url: URL?, animated: Bool)

    // Spec: VIEW-06.
    /// The load's progress changed: reset to (0, 0) when a load starts, then
    /// (received, expected) bytes, and (1, 1) after a load that finished without telling any
    /// (a cache hit). Optional; the default does nothing.
    func imageLoadProgressDidChange(_ progress: ImageTargetProgress)
}

extension ImageTarget {
    public func imageLoadProgressDidChange(_ progress: ImageTargetProgress) {}

    // Spec: VIEW-02.
    /// The operation key loads into this target use when they name none: the
    /// target's type name, so two targets never share one, and one target can run several
    /// independent loads under keys of its own (an image and a background, say).
    public var defaultImageLoadOperationKey: String { String(reflecting: type(of: self)) }

    /// Cancels the load running into this target under `operationKey` (nil: the default key).
    /// Its completion is told `cancelled`; the target is left as it is.
    public func cancelImageLoad(operationKey: String? = nil) {
        ImageTargetRegistry.shared.cancel(self, key: operationKey ?? defaultImageLoadOperationKey)?.cancel()
    }

    /// Whether a load is running into this target under `operationKey` (nil: the default key).
    public func isLoadingImage(operationKey: String? = nil) -> Bool {
        ImageTargetRegistry.shared.isLoading(self, key: operationKey ?? defaultImageLoadOperationKey)
    }
}

// Spec: VIEW-06.
/// A target's load progress in units (SDWebImage's `sd_imageProgress`).
public struct ImageTargetProgress: Sendable, Hashable {
    /// Bytes received.
    public var completedUnitCount: Int64
    /// Bytes expected; 0 when unknown.
    public var totalUnitCount: Int64

    /// Progress in units (bytes); `totalUnitCount` 0 or less means unknown.
    public init(completedUnitCount: Int64, totalUnitCount: Int64) {
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
    }

    /// A load that finished without reporting progress (SDWebImage's "unknown" unit count).
    public static let unknownCompleted = ImageTargetProgress(completedUnitCount: 1, totalUnitCount: 1)

    /// completed / total clamped to [0, 1]; 0 when the total is unknown.
    public var fractionCompleted: Double {
        guard totalUnitCount > 0 else { return 0 }
        return min(1, max(0, Double(completedUnitCount) / Double(totalUnitCount)))
    }
}
