import Foundation
import FuzzSupport

@testable import ImageKit

/// ImageManager's whole flow on fuzzer bytes: a loader that serves the input, a memory cache,
/// thumbnail or full decode, a transformer or none, the store (memory, and a re-encode that a
/// disk-less cache refuses).
exit(
    runFuzzer { input in
        let flags = input.byte()
        let data = input.data
        var options: ImageLoadOptions = [.fromLoaderOnly, .waitStoreCache]
        if flags & 1 != 0 { options.insert(.decodeFirstFrameOnly) }
        if flags & 2 != 0 { options.insert(.scaleDownLargeImages) }
        if flags & 4 != 0 { options.insert(.transformAnimatedImage) }
        var context = ImageLoadContext()
        if flags & 8 != 0 { context.thumbnailPixelSize = PixelSize(48) }
        if flags & 16 != 0 { context.transformer = FirstRow() }
        let manager = FuzzManagerFixture.manager(serving: data)
        let done = DispatchSemaphore(value: 0)
        manager.loadImage(with: URL(string: "fuzz://host/\(flags).img"), options: options, context: context) { _ in
            done.signal()
        }
        done.wait()
    })

/// A transformer that keeps the top row: cheap, and it changes the size.
struct FirstRow: ImageTransforming {
    var transformerKey: String { "FirstRow" }
    func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try ImageCodersManager.shared.decode(
            try ImageCodersManager.shared.encode(image, as: .png, options: .init(compressionLevel: 0)),
            options: ImageDecodingOptions(
                thumbnailPixelSize: PixelSize(width: image.width, height: 1),
                preservesAspectRatio: false))
    }
}

enum FuzzManagerFixture {
    static func manager(serving data: Data) -> ImageManager {
        let cache = ImageCache(
            memoryCache: MemoryCache(configuration: .init(costLimit: 64 << 20)), diskCache: UnavailableDiskCache())
        return ImageManager(cache: cache, loader: BytesLoader(data: data))
    }
}

struct BytesLoader: ImageLoading {
    let data: Data
    func canLoad(_ url: URL) -> Bool { true }
    func load(
        _ request: ImageLoadRequest, progress: (@Sendable (ImageLoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ImageLoadResponse, ImageError>) -> Void
    ) -> any ImageLoadCancellable {
        let token = LocalLoadToken(completion)
        progress?(ImageLoadProgress(receivedBytes: Int64(data.count), expectedBytes: Int64(data.count)))
        token.finish(
            data.isEmpty
                ? .failure(ImageError(.emptyData, "empty")) : .success(ImageLoadResponse(url: request.url, data: data)))
        return token
    }
}
