import Foundation
import ImageKit

extension ImageProcessor {
    /// The facts `/meta/` (thumbor) and `/info/` (imgproxy) answer: the source's format, size,
    /// orientation and frames, and the size the operations would give, read from the header
    /// where it can be (nothing is decoded then) — as JSON; and the placeholders and colours
    /// asked (``ImageOperations/infoFacts``), on a decode-time thumbnail.
    public func metadata(_ data: Data, request: ImageRequest) throws(ImageServiceError) -> Data {
        let signature = ImageSignature(data)
        if let video = try openVideo(data, signature: signature) {
            return try videoMetadata(video, request: request)
        }
        guard signature.format != .unknown else {
            throw ImageServiceError(.notAnImage, "the source is not an image")
        }
        var width: Int, height: Int, orientation = 1, frames = 1
        if let probe = ImageProbe(data), request.operations.trim == nil {
            guard probe.width * probe.height <= maxPixels else {
                throw ImageServiceError(
                    .tooManyPixels, "the source has \(probe.width)x\(probe.height) pixels, over \(maxPixels)")
            }
            let swaps = request.operations.autoRotate && probe.orientation.swapsDimensions
            (width, height) = swaps ? (probe.height, probe.width) : (probe.width, probe.height)
            orientation = probe.orientation.rawValue
            if signature.format == .gif || signature.isAnimated {
                frames =
                    (try? coders.decode(data, options: ImageDecodingOptions(decodesFramesLazily: true)).frameCount) ?? 1
            }
        } else {
            var options = ImageDecodingOptions.default
            options.limits.maxPixelsPerFrame = maxPixels
            options.decodesFramesLazily = true
            let decoded: DecodedImage
            do { decoded = try coders.decode(data, options: options) } catch { throw ImageServiceError(error) }
            (width, height, frames) = (decoded.width, decoded.height, decoded.frameCount)
            orientation = decoded.orientation.rawValue
        }
        let plan = GeometryPlan(
            sourceWidth: width, sourceHeight: height,
            sourceIsGIF: signature.format == .gif,
            request: request)
        var object: [String: Any] = [
            "source": [
                "url": request.source.absoluteString,
                "format": ImageOperations.Format(signature.format)?.rawValue ?? "\(signature.format)",
                "width": width, "height": height, "orientation": orientation, "frameCount": frames,
            ],
            "target": ["width": plan.outputWidth, "height": plan.outputHeight],
            "operations": request.operations.canonicalKey,
        ]
        let placeholders = try infoFacts(
            request.operations.infoFacts, data: data, video: nil, autoRotate: request.operations.autoRotate)
        object.merge(placeholders) { _, fact in fact }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// A video's `/meta/` and `/info/`: its upright size, frame count, and its stream's facts under
    /// `video` (duration and frame rate, codec, container, coded size, rotation, HDR). The planned
    /// size is that of a still of it.
    private func videoMetadata(_ video: VideoFrameSource, request: ImageRequest) throws(ImageServiceError) -> Data {
        let info = video.info
        let plan = GeometryPlan(
            sourceWidth: info.displaySize.width, sourceHeight: info.displaySize.height, sourceIsGIF: false,
            request: request)
        var facts: [String: Any] = [
            "duration": info.duration, "frame_rate": info.frameRate, "codec": info.codec, "container": info.container,
            "coded_width": info.codedSize.width, "coded_height": info.codedSize.height, "rotation": info.rotation,
            "hdr": info.isHDR,
        ]
        if let frameCount = info.frameCount { facts["frame_count"] = frameCount }
        var object: [String: Any] = [
            "source": [
                "url": request.source.absoluteString, "format": "video", "width": info.displaySize.width,
                "height": info.displaySize.height, "orientation": 1, "frameCount": info.frameCount ?? 1,
            ],
            "video": facts,
            "target": ["width": plan.outputWidth, "height": plan.outputHeight],
            "operations": request.operations.canonicalKey,
        ]
        let placeholders = try infoFacts(request.operations.infoFacts, data: Data(), video: video, autoRotate: true)
        object.merge(placeholders) { _, fact in fact }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }
}
