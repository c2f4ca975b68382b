import ImageKit

/// The frame cut to the region the plan keeps and resampled exactly to its target size (one
/// resample: the decode-time thumbnail may already be the exact size).
enum CropAndScale: FrameStep {
    static func apply(_ frame: Bitmap, _ context: ProcessingContext) throws(ImageError) -> Bitmap {
        var frame = frame
        let bounded = context.decodedRegion.intersection(
            PixelRect(x: 0, y: 0, width: frame.width, height: frame.height))
        if bounded.width != frame.width || bounded.height != frame.height {
            frame = try frame.cropped(to: bounded)
        }
        if frame.width != context.targetSize.width || frame.height != context.targetSize.height {
            frame = try frame.resized(to: context.targetSize)
        }
        return frame
    }
}
