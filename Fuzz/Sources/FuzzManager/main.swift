import Foundation
import FuzzSupport

@testable import ImageKit

/// ImageManager's whole flow on fuzzer bytes: a loader that serves the input, a memory cache,
/// thumbnail or full decode, a transformer or none, the store (memory, and a re-encode that a
/// disk-less cache refuses).
exit(
    runFuzzer { input in
        let flags = input.byte()
        // The input's bytes in a buffer of the harness's own, freed by the last `Data` that
        // shares it: `inputFreed` says when every holder (loader, job, decoder, cache, lazy
        // animation) has let go, whichever thread that happens on.
        let inputFreed = DispatchSemaphore(value: 0)
        var options: ImageLoadOptions = [.fromLoaderOnly, .waitStoreCache]
        if flags & 1 != 0 { options.insert(.decodeFirstFrameOnly) }
        if flags & 2 != 0 { options.insert(.scaleDownLargeImages) }
        if flags & 4 != 0 { options.insert(.transformAnimatedImage) }
        var context = ImageLoadContext()
        if flags & 8 != 0 { context.thumbnailPixelSize = PixelSize(48) }
        if flags & 16 != 0 { context.transformer = FirstRow() }
        weak var released: ImageManager?
        do {
            let data: Data
            if input.bytes.isEmpty {
                data = Data()
                inputFreed.signal()
            } else {
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: input.bytes.count, alignment: 1)
                buffer.copyMemory(from: input.bytes)
                data = Data(
                    bytesNoCopy: buffer.baseAddress!, count: buffer.count,
                    deallocator: .custom { pointer, _ in
                        pointer.deallocate()
                        inputFreed.signal()
                    })
            }
            let manager = FuzzManagerFixture.manager(serving: data)
            released = manager
            let done = DispatchSemaphore(value: 0)
            manager.loadImage(with: URL(string: "fuzz://host/\(flags).img"), options: options, context: context) { _ in
                done.signal()
            }
            done.wait()
        }
        waitUntilQuiet(inputFreed: inputFreed, manager: { released })
    })

/// Returns once the load has no work left on any thread, so that libFuzzer's leak check after
/// the input sees only what is really unreachable.
///
/// The job's task outlives the completion by its bookkeeping and holds the manager (its cache,
/// a lazy animation and the source bytes); the last release of each runs on whichever thread
/// drops it. LeakSanitizer cannot see a heap object's reference to a `Data` (the enum's tag lives
/// in the storage pointer's spare bits), so a check that runs while another thread still holds
/// or is tearing down the source reports its live bytes as a direct leak — the finding of issue
/// 45. Bytes or a manager still alive 10 s after the load are a real leak, and a finding.
func waitUntilQuiet(inputFreed: DispatchSemaphore, manager: () -> ImageManager?) {
    precondition(
        inputFreed.wait(timeout: .now() + .seconds(10)) == .success,
        "the input's bytes outlived their load by 10 s: something retains them")
    let deadline = DispatchTime.now() + .seconds(10)
    while manager() != nil {
        precondition(DispatchTime.now() < deadline, "the manager outlived its load by 10 s: something retains it")
        usleep(50)
    }
    // A weak reference reads nil, and a deallocator runs, while the releasing thread still has
    // the object's own fields and memory to free: a few instructions, given ample time here.
    usleep(1000)
}

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
