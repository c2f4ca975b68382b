internal import CGIF
import Foundation

/// GIF decoding and encoding with giflib.
///
/// Frames are composited onto the logical screen (transparent at the start) with disposal
/// methods 0–3, per-frame transparency and local palettes; parts of frames outside the screen
/// are clipped. Delays of 10 ms or less become 100 ms, as browsers do. The loop count comes from
/// the NETSCAPE2.0 (or ANIMEXTS1.0) extension; without one the animation plays once.
public struct GIFCoder: ImageCoding {
    /// The GIF coder (giflib for records, ImageKit's LZW decoder).
    public init() {}

    public func canDecode(_ signature: ImageSignature) -> Bool { signature.format == .gif }
    public func canEncode(_ format: ImageFormat) -> Bool { format == .gif }

    public func decode(_ data: Data, options: ImageDecodingOptions) throws(ImageError) -> DecodedImage {
        try data.withImageBytes { bytes throws(ImageError) in
            try GIFDecoding(bytes: bytes, options: options, completeFramesOnly: false).run()
        }
    }

    /// With `completeFramesOnly`, data that ends early yields the frames completed before the
    /// end (progressive loading) instead of an error; at least one frame must be complete.
    static func decode(
        _ bytes: UnsafeRawBufferPointer, options: ImageDecodingOptions,
        completeFramesOnly: Bool
    ) throws(ImageError) -> DecodedImage {
        try GIFDecoding(bytes: bytes, options: options, completeFramesOnly: completeFramesOnly).run()
    }

    /// Writes GIF, animated when the image has frames (palette by median cut).
    public func encode(_ image: DecodedImage, as format: ImageFormat, options: ImageEncodingOptions) throws(ImageError)
        -> Data
    {
        guard format == .gif else { throw ImageError(.encodingFailed, "GIFCoder cannot encode \(format)") }
        return try GIFEncoding.encode(image, firstFrameOnly: options.firstFrameOnly)
    }
}

/// Reads a GIF from memory for giflib's input callback.
final class GIFMemoryReader {
    /// The bytes giflib reads; a session that outlives one borrow of them is pointed at them again
    /// before each use (the offset stays).
    var bytes: UnsafeRawBufferPointer
    var offset = 0
    var hitEnd = false
    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    static let read: InputFunc = { gif, out, wanted in
        guard let gif, let out, wanted > 0 else { return 0 }
        let reader = Unmanaged<GIFMemoryReader>.fromOpaque(gif.pointee.UserData).takeUnretainedValue()
        let available = reader.bytes.count - reader.offset
        let count = min(Int(wanted), available)
        if count < Int(wanted) { reader.hitEnd = true }
        if count > 0 {
            UnsafeMutableRawPointer(out).copyMemory(from: reader.bytes.baseAddress! + reader.offset, byteCount: count)
            reader.offset += count
        }
        return Int32(count)
    }
}
