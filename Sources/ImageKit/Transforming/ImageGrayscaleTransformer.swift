/// Turns an image (every frame) grey with ITU-R 601 luma, keeping alpha
/// (see ``Bitmap/grayscaled()``).
///
/// SDWebImage has no grayscale transformer of its own (it uses a Core Image filter), so the key
/// is ImageKit's: `ImageGrayscaleTransformer(601)`.
public struct ImageGrayscaleTransformer: ImageTransforming {
    /// A grayscale transformer.
    public init() {}

    public var transformerKey: String { "ImageGrayscaleTransformer(601)" }

    public func transform(_ image: DecodedImage) throws(ImageError) -> DecodedImage? {
        try image.mappingFrames { bitmap throws(ImageError) in try bitmap.grayscaled() }
    }
}
