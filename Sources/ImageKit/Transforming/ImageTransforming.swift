import Foundation

// Spec: TRK-02, TRK-03.
/// Turns a decoded image into another (SDWebImage's `SDImageTransformer`): resize,
/// crop, round corners …
///
/// ``transformerKey`` names the transformation with its parameters; the manager appends it to
/// the cache key, so every variant of a URL is cached apart from the original and from
/// the other variants. Two transformers with the same key must produce the same pixels.
///
/// ```swift
/// struct Grayscale: ImageTransforming {
///     var transformerKey: String { "Grayscale" }
///     func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? { … }
/// }
/// let result = try await ImageManager.shared.loadImage(url, context: .init(transformer: Grayscale()))
/// ```
public protocol ImageTransforming: Sendable {
    /// A stable identifier of the transformation and its parameters, e.g. `Resize(256x256,fit)`.
    var transformerKey: String { get }
    // Spec: ERR-05.
    /// The transformed image, or nil when the transformer declines (the load then completes
    /// with no image and no error). Runs on the manager's decode threads, never on the
    /// caller's.
    func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage?
}

// Spec: TRK-03.
/// Several transformers applied in order; its key is theirs joined by `-`.
public struct ImagePipelineTransformer: ImageTransforming {
    /// The transformers, applied first to last.
    public let transformers: [any ImageTransforming]

    /// A pipeline of `transformers`, applied in order.
    public init(_ transformers: [any ImageTransforming]) {
        self.transformers = transformers
    }

    public var transformerKey: String { transformers.map(\.transformerKey).joined(separator: "-") }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        var current = image
        for transformer in transformers {
            guard let next = try transformer.transform(current) else { return nil }
            current = next
        }
        return current
    }
}
