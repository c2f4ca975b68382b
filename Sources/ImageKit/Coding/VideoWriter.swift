internal import CImageCodecs
import Foundation

/// Animations written as real video: H.264 in MP4 or VP9 in WebM (the `Video` trait: FFmpeg's
/// libavcodec with libx264 and libvpx, libavformat, libswscale).
///
/// Every frame keeps its own timing (a GIF's 40 ms frame stays 40 ms); a delay under 11 ms
/// shows for 100 ms, as browsers play GIFs. 4:2:0 video needs even sides: an odd side loses its
/// last row or column (a side of 1 becomes 2). Transparent pixels are composited onto white.
/// An MP4 has its index first (faststart), so a browser plays it while it downloads.
///
/// ```swift
/// let gif = try ImageCodersManager.shared.decode(gifBytes)
/// let mp4 = try VideoWriter.encode(gif, as: .mp4)
/// try mp4.write(to: URL(fileURLWithPath: "loop.mp4"))   // often a tenth of the GIF's bytes
/// ```
public enum VideoWriter {
    /// A container and the codec written in it.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// H.264 (High profile, 4:2:0) in MP4, index first.
        case mp4
        /// VP9 (4:2:0) in WebM.
        case webm

        /// `video/mp4` or `video/webm`.
        public var mimeType: String { "video/" + rawValue }
    }

    /// Whether this build writes video (the `Video` trait).
    public static var isSupported: Bool { VideoFrameSource.isSupported }

    /// The frames of `image` as a video.
    /// - Parameters:
    ///   - image: one frame or more, eager or lazy; a still becomes a one-second video.
    ///   - format: MP4 (H.264) or WebM (VP9).
    ///   - quality: 0…1, mapped to the encoder's constant rate factor (0.8: x264's CRF 23, VP9's 31).
    /// - Throws: ``ImageError/Code/unsupportedFormat`` in a build without the trait;
    ///   ``ImageError/Code/encodingFailed`` when the encoder or muxer fails.
    public static func encode(_ image: DecodedImage, as format: Format, quality: Double = 0.8) throws(ImageError)
        -> Data
    {
        let count = image.frameCount
        guard count > 0 else { throw ImageError(.emptyData, "no frames to write") }
        let width = image.width, height = image.height
        var message = [CChar](repeating: 0, count: 256)
        var writer: OpaquePointer?
        let container = format == .mp4 ? IK_VIDEO_MP4_H264 : IK_VIDEO_WEBM_VP9
        let percent = Int32((min(max(quality, 0), 1) * 100).rounded())
        var status = ik_video_writer_open(
            container, Int32(clamping: width), Int32(clamping: height), percent, &writer, &message, message.count)
        guard status == IK_VIDEO_OK, let writer else { throw error(status, message) }
        defer { ik_video_writer_close(writer) }
        // Starts are rounded from the exact running time, so 30 fps stays 30 fps over a minute.
        var seconds = 0.0
        var start: Int64 = 0
        for index in 0..<count {
            // A lazy animation decodes one frame at a time: memory is one frame, not the GIF's length.
            let frame = try image.frame(at: index)
            let bitmap = frame.bitmap
            guard bitmap.width == width, bitmap.height == height else {
                throw ImageError(.encodingFailed, "every frame of a video must be \(width)x\(height)")
            }
            status = bitmap.withUnsafeBytes { bytes in
                ik_video_writer_add(
                    writer, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bitmap.bytesPerRow, start,
                    &message, message.count)
            }
            guard status == IK_VIDEO_OK else { throw error(status, message) }
            seconds += showing(frame.duration, isStill: count == 1)
            start = max(start + 1, Int64((seconds * 1000).rounded()))
        }
        var bytes: UnsafeMutablePointer<UInt8>?
        var size = 0
        status = ik_video_writer_finish(writer, start, &bytes, &size, &message, message.count)
        guard status == IK_VIDEO_OK, let bytes else { throw error(status, message) }
        defer { ik_video_bytes_free(bytes) }
        return Data(bytes: bytes, count: size)
    }

    /// How long a frame shows, in seconds: its duration, 0.1 under 11 ms, 1 for a lone still.
    static func showing(_ duration: Double, isStill: Bool) -> Double {
        if isStill && duration <= 0 { return 1 }
        return duration.isFinite && duration >= 0.011 ? min(duration, 3600) : 0.1
    }

    private static func error(_ status: ik_video_status, _ message: [CChar]) -> ImageError {
        let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        switch status {
        case IK_VIDEO_UNAVAILABLE, IK_VIDEO_UNSUPPORTED_CODEC: return ImageError(.unsupportedFormat, text)
        case IK_VIDEO_TOO_LARGE: return ImageError(.decompressionBomb, text)
        default: return ImageError(.encodingFailed, text)
        }
    }
}
