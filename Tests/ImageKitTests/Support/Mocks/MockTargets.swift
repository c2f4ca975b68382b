import Foundation
import XCTest

@testable import ImageKit

/// A target that records what it is told, in order.
final class RecordingTarget: ImageTarget, @unchecked Sendable {
    // Invariant: `sets` and `progress` are touched only under `lock`.
    struct SetCall {
        let image: DecodedImage?
        let data: Data?
        let cacheType: ImageCacheType
        let url: URL?
        let animated: Bool
        var width: Int? { image?.width }
    }

    private let lock = NSLock()
    private var setCalls: [SetCall] = []
    private var progressCalls: [ImageTargetProgress] = []

    func setImage(_ image: DecodedImage?, data: Data?, cacheType: ImageCacheType, url: URL?, animated: Bool) {
        lock.lock();
        setCalls.append(SetCall(image: image, data: data, cacheType: cacheType, url: url, animated: animated));
        lock.unlock()
    }

    func imageLoadProgressDidChange(_ progress: ImageTargetProgress) {
        lock.lock(); progressCalls.append(progress); lock.unlock()
    }

    var sets: [SetCall] { lock.lock(); defer { lock.unlock() }; return setCalls }
    var progress: [ImageTargetProgress] { lock.lock(); defer { lock.unlock() }; return progressCalls }
    /// Widths of the images set, 0 for nil.
    var widths: [Int] { sets.map { $0.width ?? 0 } }
}

/// A second target type, for the default operation key.
final class OtherTarget: ImageTarget, @unchecked Sendable {
    func setImage(_ image: DecodedImage?, data: Data?, cacheType: ImageCacheType, url: URL?, animated: Bool) {}
}
