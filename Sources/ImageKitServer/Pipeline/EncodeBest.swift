import Foundation
import ImageKit

/// The `best` format: the result encoded in each candidate the client accepts, in the encodings
/// its row of the capability table names (``ImageOperations/Format/BestTries``: lossless only
/// where it wins), only formats that keep every frame for an animation and only those with alpha
/// for a transparent image; the smallest kept. Above ``ruleAbovePixels`` trying them all costs too much: the best format
/// the client accepts is taken by rule (AVIF, then WebP, then JPEG or PNG).
enum EncodeBest {
    /// 4 MP: a 2560 × 1600 answer.
    static let ruleAbovePixels = 4_000_000

    static func run(_ image: DecodedImage, _ context: inout ProcessingContext) throws(ImageServiceError) {
        let animated = image.frameCount > 1, opaque = image.isOpaque
        let candidates = context.operations.bestCandidates.filter { format in
            format.encodableFormat != nil && (!animated || format.keepsFrames)
                && (opaque || format.capabilities.hasAlpha)
                && (animated || !format.capabilities.bestTries.animationsOnly)
        }
        guard !candidates.isEmpty else {
            throw ImageServiceError(.unsupportedOutputFormat, "no format the client accepts writes this image")
        }
        var tries: [(ImageOperations.Format, lossless: Bool)] = []
        if image.width * image.height > ruleAbovePixels {
            let ranked = candidates.min { ($0.capabilities.bestRank ?? .max) < ($1.capabilities.bestRank ?? .max) }
            tries = [(ranked ?? candidates[0], false)]
        } else {
            let fewColours = animated ? false : Self.hasFewColours(image.frames[0].bitmap)
            for format in candidates {
                let encodings = format.capabilities.bestTries.encodings(
                    fewColours: fewColours, opaque: opaque, animated: animated)
                tries += encodings.map { (format, $0) }
            }
            if tries.isEmpty { tries = [(candidates[0], !candidates[0].capabilities.bestTries.lossy)] }
        }
        let start = ContinuousClock.now
        defer { context.encodeTime += ContinuousClock.now - start }
        var best: (ImageOperations.Format, Data, AutoQualityChoice?)?
        for (format, lossless) in tries {
            guard let target = format.encodableFormat else { continue }
            let operations = context.operations
            let quality = operations.formatQuality[format] ?? operations.quality ?? context.processor.defaultQuality
            var options = ImageEncodingOptions(quality: Double(min(max(quality, 1), 100)) / 100, lossless: lossless)
            options.maxFileSize = operations.maxBytes
            // With autoquality, each lossy candidate meets the same target: like is compared with like.
            guard let (data, choice) = try? Encode.encode(image, as: format, target, options: options, context) else {
                continue
            }
            if data.count < (best?.1.count ?? .max) { best = (format, data, choice) }
        }
        guard let (format, data, choice) = best else {
            throw ImageServiceError(.processingFailed, "no candidate format could write the image")
        }
        context.outputFormat = format
        context.result = ProcessedImage(
            data: data, format: format, width: image.width, height: image.height,
            frameCount: format.keepsFrames ? image.frameCount : 1, autoQuality: choice)
    }

    /// At most 256 distinct colours: a graphic, a screenshot, a logo — where lossless is small.
    static func hasFewColours(_ bitmap: Bitmap) -> Bool {
        var colours = Set<UInt32>()
        return bitmap.withUnsafeBytes { bytes in
            for y in 0..<bitmap.height {
                let row = bytes.baseAddress! + y * bitmap.bytesPerRow
                for x in 0..<bitmap.width {
                    colours.insert(row.loadUnaligned(fromByteOffset: x * 4, as: UInt32.self))
                    if colours.count > 256 { return false }
                }
            }
            return true
        }
    }
}
