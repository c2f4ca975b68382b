import Foundation

extension DecodedImage {
    /// Every frame's bitmap replaced by `transform(bitmap)`, durations and loop count kept.
    ///
    /// The pixels are made upright first (``applyingOrientation()``) so that a transformer
    /// works on what a viewer sees, whatever the decoder was asked. A lazy animation is decoded
    /// whole first (``loadingAllFrames()``): the result is an eager image.
    public func mappingFrames(_ transform: (Bitmap) throws(ImageError) -> Bitmap) throws(ImageError) -> DecodedImage {
        var copy = try loadingAllFrames().applyingOrientation()
        for index in copy.frames.indices {
            copy.frames[index].bitmap = try transform(copy.frames[index].bitmap)
        }
        return copy
    }
}

/// How transformer keys render numbers and colours: the way SDWebImage's Objective-C does
/// (`%f`, six decimals; colours as `#rrggbbaa`), so keys — and the cache files named after
/// them — mean the same thing in both libraries.
enum TransformerKeyFormat {
    /// `%f`: six decimals, e.g. `256.000000`.
    static func decimal(_ value: Double) -> String {
        String(format: "%f", value)
    }
}
