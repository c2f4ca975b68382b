internal import CImageCodecs
import Foundation

/// Still frames of a video — a poster, a sprite sheet's tiles, a preview's frames — decoded only
/// as far as each one needs (the `Video` trait: FFmpeg's libavformat, libavcodec and libswscale).
///
/// MP4 and MOV (H.264, HEVC, AV1), WebM and MKV (VP8, VP9, AV1), and whatever else the linked
/// FFmpeg reads, are recognised by their bytes. A frame is found by seeking to the key frame at
/// or before its time and decoding forward to it, then converted to RGBA straight at the size
/// asked, turned upright by the stream's display matrix and, for an HDR (PQ or HLG) stream,
/// tone-mapped to SDR sRGB as HDR images are. Memory is the video's bytes, one
/// decoded frame and the decoder's own buffers, whatever the video's length.
///
/// A source is used by one task at a time (it keeps the decoder's position between frames), so
/// it is not `Sendable`; open one per request.
///
/// ```swift
/// let video = try VideoFrameSource(data: mp4Bytes)
/// print(video.info.duration, video.info.codec, video.info.displaySize)
/// let poster = try video.frame(at: 1, fitting: PixelSize(width: 320, height: 180))
/// print(poster.bitmap.width, poster.bitmap.height, poster.time)   // 320 180 1.0 for a 1280×720 video
/// ```
public final class VideoFrameSource {
    /// What the container says of its first video stream.
    public struct Info: Sendable, Hashable {
        /// Seconds; 0 when the container does not say.
        public var duration: Double
        /// The frame size as coded, before rotation.
        public var codedSize: PixelSize
        /// The frame size as shown, rotation applied.
        public var displaySize: PixelSize
        /// Frames per second (the stream's average); 0 when unknown.
        public var frameRate: Double
        /// The stream's frame count when the container records it.
        public var frameCount: Int?
        /// Clockwise degrees (0, 90, 180 or 270) the frames are turned to be shown upright.
        public var rotation: Int
        /// FFmpeg's codec name: `h264`, `hevc`, `vp8`, `vp9`, `av1` …
        public var codec: String
        /// FFmpeg's container name: `mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm` …
        public var container: String
        /// The stream's transfer function is PQ or HLG (HDR): its frames are tone-mapped to SDR
        /// sRGB as HDR images are.
        public var isHDR: Bool { hdrTransfer != nil }
        /// The stream's HDR transfer function, nil for SDR.
        public var hdrTransfer: HDRTransfer?
    }

    /// How a time picks its frame.
    public enum SeekMode: Sendable, Hashable {
        /// The frame shown at the time: the last one that starts at or before it.
        case exact
        /// The key frame at or before the time: the cheapest frame near it (one decode).
        case keyframe
    }

    /// Bounds on the work one source may do.
    public struct Limits: Sendable, Hashable {
        /// The most pixels a coded frame may have; a larger stream is refused before any decode.
        public var maxPixels: Int
        /// The most frames one ``VideoFrameSource/frame(at:mode:fitting:)`` may decode to reach its
        /// time (from the key frame before it).
        public var maxDecodedFrames: Int

        /// 50 M pixels (as for images) and 1,000 frames a call.
        public init(maxPixels: Int = 50_000_000, maxDecodedFrames: Int = 1_000) {
            self.maxPixels = maxPixels
            self.maxDecodedFrames = maxDecodedFrames
        }
    }

    /// A frame and the time it starts at.
    public struct Frame: Sendable {
        /// The frame, upright, at the size asked.
        public var bitmap: Bitmap
        /// Seconds from the stream's start.
        public var time: Double
    }

    /// The stream's facts.
    public let info: Info
    /// The bounds given at opening.
    public let limits: Limits
    /// Frames decoded by the last ``frame(at:mode:fitting:)``.
    public private(set) var framesDecoded = 0

    private let handle: OpaquePointer
    private let primaries: ColorPrimaries
    // libavformat reads the bytes for as long as the handle lives: a copy of our own, so that no
    // Data's storage has to stay pinned.
    private let bytes: UnsafeMutableRawBufferPointer

    /// Whether this build reads video (the `Video` trait).
    public static var isSupported: Bool {
        #if Video
        true
        #else
        false
        #endif
    }

    /// Whether `data` begins like a video container: an ISO BMFF box (MP4, MOV: `ftyp`, `moov`,
    /// `mdat`, `free`, `skip`, `wide`), Matroska's EBML header (MKV, WebM) or RIFF AVI. A cheap test
    /// of the first twelve bytes, for bytes ``ImageSignature`` found no image in; opening tells.
    public static func mayBeVideo(_ data: Data) -> Bool {
        guard data.count >= 12 else { return false }
        let head = [UInt8](data.prefix(12))
        if head[0...3].elementsEqual([0x1A, 0x45, 0xDF, 0xA3]) { return true }
        if head[0...3].elementsEqual("RIFF".utf8), head[8...11].elementsEqual("AVI ".utf8) { return true }
        let box = String(decoding: head[4...7], as: UTF8.self)
        return ["ftyp", "moov", "mdat", "free", "skip", "wide"].contains(box)
    }

    /// Opens a video held in memory and reads its stream's facts (no frame is decoded).
    /// - Throws: ``ImageError/Code/unsupportedFormat`` when this build has no video support, the
    ///   bytes are no video container, it holds no video stream (audio only) or its codec is not
    ///   decodable here; ``ImageError/Code/decompressionBomb`` when the coded size is over
    ///   `limits.maxPixels`; ``ImageError/Code/badImageData`` for a damaged container;
    ///   ``ImageError/Code/emptyData`` for no bytes.
    public init(data: Data, limits: Limits = Limits()) throws(ImageError) {
        guard !data.isEmpty else { throw ImageError(.emptyData, "no video bytes") }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 64)
        data.withUnsafeBytes { _ = bytes.initializeMemory(as: UInt8.self, from: $0) }
        var handle: OpaquePointer?
        var info = ik_video_info()
        var message = [CChar](repeating: 0, count: 256)
        let status = ik_video_open(
            bytes.baseAddress, bytes.count, Int64(clamping: limits.maxPixels), &handle, &info, &message, message.count)
        guard status == IK_VIDEO_OK, let handle else {
            bytes.deallocate()
            throw Self.error(status, message)
        }
        self.bytes = bytes
        self.handle = handle
        self.limits = limits
        let coded = PixelSize(width: Int(info.width), height: Int(info.height))
        let turns = Int(info.quarter_turns)
        self.info = Info(
            duration: info.duration, codedSize: coded, displaySize: turns % 2 == 1 ? coded.transposed : coded,
            frameRate: info.frame_rate, frameCount: info.frame_count > 0 ? Int(info.frame_count) : nil,
            rotation: turns * 90, codec: Self.string(info.codec), container: Self.string(info.container),
            hdrTransfer: info.is_pq != 0 ? .pq : info.is_hlg != 0 ? .hlg : nil)
        primaries = ColorPrimaries(cicp: Int(info.primaries))
    }

    deinit {
        ik_video_close(handle)
        bytes.deallocate()
    }

    /// The frame at `seconds`, upright; `fitting` scales it to fit inside that box, aspect kept and
    /// never enlarged (the conversion goes straight to that size: no full-size frame is made).
    /// A time before the first frame gives the first, one after the end the last.
    /// - Throws: ``ImageError/Code/decompressionBomb`` when reaching the time would decode more
    ///   than `limits.maxDecodedFrames` frames; ``ImageError/Code/badImageData`` when no frame
    ///   can be decoded there.
    public func frame(at seconds: Double, mode: SeekMode = .exact, fitting box: PixelSize? = nil) throws(ImageError)
        -> Frame
    {
        let upright = Self.size(info.displaySize, fitting: box)
        let turns = info.rotation / 90
        let coded = turns % 2 == 1 ? upright.transposed : upright
        var message = [CChar](repeating: 0, count: 256)
        var time = 0.0
        func decode(into pixels: UnsafeMutableRawPointer, stride: Int, rgb48: Bool) -> ik_video_status {
            let status = ik_video_frame(
                handle, seconds.isFinite ? seconds : 0, mode == .keyframe ? 1 : 0,
                Int32(clamping: max(1, limits.maxDecodedFrames)), Int32(coded.width), Int32(coded.height), pixels,
                stride, rgb48 ? 1 : 0, &time, &message, message.count)
            framesDecoded = Int(ik_video_frames_decoded(handle))
            return status
        }
        let bitmap: Bitmap
        if let transfer = info.hdrTransfer {
            // 16-bit code values in the stream's transfer, then the images' tone mapper.
            let samples = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: coded.width * coded.height * 3)
            defer { samples.deallocate() }
            let status = decode(into: samples.baseAddress!, stride: coded.width * 6, rgb48: true)
            guard status == IK_VIDEO_OK else { throw Self.error(status, message) }
            bitmap = try HDRToneMapper.mapper(transfer: transfer, primaries: primaries, maxCode: 65535, peakNits: nil)
                .map(
                    samples.baseAddress!, stride: coded.width * 3, channels: 3, width: coded.width,
                    height: coded.height, isOpaque: true)
        } else {
            let buffer = try PixelBuffer(width: coded.width, height: coded.height)
            let status = decode(into: buffer.baseAddress, stride: buffer.bytesPerRow, rgb48: false)
            guard status == IK_VIDEO_OK else { throw Self.error(status, message) }
            bitmap = buffer.freeze(isOpaque: true)
        }
        return Frame(bitmap: turns == 0 ? bitmap : try bitmap.rotated(quarterTurns: -turns), time: time)
    }

    /// `size` scaled to fit inside `box` (aspect kept, at least 1 × 1), or `size` when it fits.
    static func size(_ size: PixelSize, fitting box: PixelSize?) -> PixelSize {
        guard let box, box.width > 0, box.height > 0, size.width > box.width || size.height > box.height else {
            return size
        }
        let scale = min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height))
        return PixelSize(
            width: max(1, Int((Double(size.width) * scale).rounded())),
            height: max(1, Int((Double(size.height) * scale).rounded())))
    }

    private static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    private static func error(_ status: ik_video_status, _ message: [CChar]) -> ImageError {
        let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        switch status {
        case IK_VIDEO_TOO_LARGE, IK_VIDEO_FRAME_LIMIT: return ImageError(.decompressionBomb, text)
        case IK_VIDEO_NO_VIDEO, IK_VIDEO_UNSUPPORTED_CODEC, IK_VIDEO_UNAVAILABLE, IK_VIDEO_UNRECOGNISED:
            return ImageError(.unsupportedFormat, text)
        case IK_VIDEO_INVALID, IK_VIDEO_DECODE_FAILED: return ImageError(.badImageData, text)
        default: return ImageError(.internalError, text)
        }
    }
}
