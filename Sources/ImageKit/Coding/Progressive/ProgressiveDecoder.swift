import Foundation

/// Decodes an image while its bytes arrive, producing previews (SDWebImage's progressive
/// coder): the session of the registered coder for the format (``ProgressiveImageDecoding``).
///
/// Give it the bytes received so far with ``update(_:isFinal:)`` (cumulative, as a downloader
/// accumulates them); ask ``preview()`` for an image whenever convenient — it answers only when
/// the new bytes can show something new: a completed JPEG scan (or a further band of rows of a
/// baseline JPEG), more PNG rows or a completed Adam7 pass, more WebP rows, a completed GIF
/// frame, a JPEG XL progressive step (its 1/8 DC image, then each pass). Previews are marked ``DecodedImage/isPreview``, honour the thumbnail and scale-down
/// options (a large progressive JPEG is never decoded at full size for a preview) and are never
/// larger than the final image. ``finalImage()`` is exactly the one-shot decode of all bytes.
///
/// Unlike SDWebImage, previews do not need the expected length: a preview is only produced
/// from what a decoder reports as decodable, so an unknown length costs nothing.
///
/// ```swift
/// let decoder = ProgressiveDecoder(options: .init(thumbnailPixelSize: PixelSize(512)))
/// for chunk in chunks {
///     received.append(chunk)
///     decoder.update(received, isFinal: false)
///     if let preview = decoder.preview() { show(preview) }
/// }
/// decoder.update(received, isFinal: true)
/// let image = try decoder.finalImage()
/// ```
public final class ProgressiveDecoder: Sendable {
    /// The options every preview and the final image are decoded with.
    public let options: ImageDecodingOptions
    let coders: ImageCodersManager
    private let state: Locked<State>

    private struct State {
        var data = Data()
        var isFinal = false
        var format: ImageFormat?
        /// The decoder's session; nil until the format is known, or when its decoder has none.
        var session: (any ProgressiveDecodingSession)?
    }

    /// A decoder for one download; `coders` decides which format's session reads the bytes.
    public init(options: ImageDecodingOptions = .default, coders: ImageCodersManager = .shared) {
        self.options = options
        self.coders = coders
        state = Locked(State())
    }

    /// The format, once enough bytes have arrived to tell.
    public var format: ImageFormat? { state.withLock { $0.format } }

    /// Hands over all bytes received so far (each call passes the whole prefix).
    public func update(_ data: Data, isFinal: Bool) {
        state.withLock { state in
            state.data = data
            state.isFinal = isFinal
            if state.format == nil, data.count >= 16 || isFinal {
                let signature = ImageSignature(data)
                state.format = signature.format
                state.session = coders.decoder(for: signature, as: (any ProgressiveImageDecoding).self)?
                    .makeProgressiveSession(for: signature, options: options)
            }
        }
    }

    /// A preview of the bytes so far, or nil when there is nothing new to show (or the data
    /// cannot be previewed yet: a decoder's fatal error here means "not yet").
    public func preview() -> DecodedImage? {
        // Previews decode under the lock: one decoder belongs to one download, so there is no
        // one to wait; the lock only keeps `update` from racing a preview.
        state.withLock { state in
            guard !state.isFinal, let session = state.session else { return nil }
            var image = session.preview(state.data)
            image?.isPreview = true
            return image
        }
    }

    /// The complete image: a one-shot decode of all bytes (after `update(_, isFinal: true)`).
    public func finalImage() throws(ImageError) -> DecodedImage {
        let (data, isFinal) = state.withLock { ($0.data, $0.isFinal) }
        guard isFinal else { throw ImageError(.truncatedData, "the final bytes have not arrived yet") }
        return try coders.decode(data, options: options)
    }
}

/// A built-in incremental decoder as a ``ProgressiveDecodingSession``: `step` runs one preview.
final class ProgressiveEngineSession<Engine>: ProgressiveDecodingSession {
    private var engine: Engine
    private let options: ImageDecodingOptions
    private let step: (inout Engine, Data, ImageDecodingOptions) -> DecodedImage?

    init(
        _ engine: Engine, options: ImageDecodingOptions,
        step: @escaping (inout Engine, Data, ImageDecodingOptions) -> DecodedImage?
    ) {
        self.engine = engine
        self.options = options
        self.step = step
    }

    func preview(_ data: Data) -> DecodedImage? { step(&engine, data, options) }
}
