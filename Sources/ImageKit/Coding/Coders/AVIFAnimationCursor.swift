#if AVIF
internal import CAVIF
import Foundation

/// AVIF image sequences frame by frame: libavif decodes the frames in order, each one whole (no
/// compositing), and reaches any frame from the key frame before it (`avifDecoderNthImage`), so a
/// checkpoint is a frame index.
final class AVIFAnimationCursor: AnimationFrameCursor {
    private let data: Data
    private let stored: PixelSize
    private let geometry: AVIFCoder.Geometry
    private let hasAlpha: Bool
    private let icc: Data?
    private let toneMapper: HDRToneMapper?
    private var decoder: UnsafeMutablePointer<avifDecoder>?
    /// Where the bytes libavif reads were: `Data` lends them for one call at a time, so the
    /// decoder is made again (and sought to `nextIndex`) if they are lent elsewhere.
    private var lentAt: UnsafeRawPointer?
    private(set) var nextIndex = 0

    init(data: Data) throws(ImageError) {
        let data = AVIFCoder.imageTracksOnly(data)
        self.data = data
        let facts = try data.withImageBytes { bytes throws(ImageError) in
            let decoder = try AVIFCoder.makeDecoder(bytes)
            defer { avifDecoderDestroy(decoder) }
            guard let first = decoder.pointee.image else { throw ImageError(.badImageData, "AVIF: no image") }
            let icc =
                first.pointee.icc.size > 0 ? Data(bytes: first.pointee.icc.data, count: first.pointee.icc.size) : nil
            return (
                PixelSize(width: Int(first.pointee.width), height: Int(first.pointee.height)),
                AVIFCoder.Geometry(first.pointee),
                decoder.pointee.alphaPresent != 0, icc, AVIFCoder.toneMapper(first.pointee)
            )
        }
        (stored, geometry, hasAlpha, icc, toneMapper) = facts
    }

    deinit {
        if let decoder { avifDecoderDestroy(decoder) }
    }

    private func withDecoder<Result>(_ body: (UnsafeMutablePointer<avifDecoder>) throws(ImageError) -> Result)
        throws(ImageError) -> Result
    {
        try data.withImageBytes { bytes throws(ImageError) in
            if decoder == nil || lentAt != bytes.baseAddress {
                if let decoder { avifDecoderDestroy(decoder) }
                decoder = nil
                let fresh = try AVIFCoder.makeDecoder(bytes)
                decoder = fresh
                lentAt = bytes.baseAddress
                if nextIndex > 0 {
                    try AVIFCoder.check(
                        avifDecoderNthImage(fresh, UInt32(nextIndex - 1)), fresh, "seeking to frame \(nextIndex - 1)")
                }
            }
            return try body(decoder!)
        }
    }

    func decodeNext() throws(ImageError) -> Bitmap {
        try withDecoder { decoder throws(ImageError) in
            try AVIFCoder.check(avifDecoderNextImage(decoder), decoder, "decoding frame \(nextIndex)")
            let bitmap = try AVIFCoder.currentFrame(
                decoder, stored: stored, geometry: geometry, hasAlpha: hasAlpha, toneMapper: toneMapper,
                index: nextIndex)
            if toneMapper == nil { ColorManagement.convertToSRGB(bitmap, from: icc) }
            nextIndex += 1
            return bitmap
        }
    }

    func skipNext() throws(ImageError) {
        try withDecoder { decoder throws(ImageError) in
            try AVIFCoder.check(avifDecoderNextImage(decoder), decoder, "decoding frame \(nextIndex)")
            nextIndex += 1
        }
    }

    func checkpoint() throws(ImageError) -> AnimationCheckpoint<Int> {
        AnimationCheckpoint(canvas: nil, position: nextIndex)
    }

    func restore(_ checkpoint: AnimationCheckpoint<Int>) throws(ImageError) {
        // A fresh decoder seeks to the frame before (from its key frame) when it is next used.
        if let decoder { avifDecoderDestroy(decoder) }
        decoder = nil
        nextIndex = checkpoint.position
    }

    func rewind() throws(ImageError) { try restore(AnimationCheckpoint(canvas: nil, position: 0)) }
}

extension AVIFCoder: AnimatedImageDecoding {
    /// An image sequence's displayed size, frame durations (from the sample table, no frame
    /// decoded) and loop count (forever, as the eager decode reports); nil for a still.
    public func animationInfo(_ data: Data, limits: DecodingLimits) throws(ImageError) -> AnimationInfo? {
        try Self.imageTracksOnly(data).withImageBytes { bytes throws(ImageError) -> AnimationInfo? in
            let decoder = try AVIFCoder.makeDecoder(bytes)
            defer { avifDecoderDestroy(decoder) }
            let count = Int(decoder.pointee.imageCount)
            guard count > 1, let first = decoder.pointee.image else { return nil }
            let stored = PixelSize(width: Int(first.pointee.width), height: Int(first.pointee.height))
            try limits.checkPixels(width: stored.width, height: stored.height)
            var durations: [Double] = []
            for index in 0..<count {
                var timing = avifImageTiming()
                try AVIFCoder.check(
                    avifDecoderNthImageTiming(decoder, UInt32(index), &timing), decoder, "timing of frame \(index)")
                durations.append(timing.duration)
            }
            return AnimationInfo(
                canvasSize: Geometry(first.pointee).displayedSize(stored), durations: durations, loopCount: 0)
        }
    }

    /// A cursor that decodes the sequence's frames in order with libavif.
    public func makeFrameCursor(_ data: Data, info: AnimationInfo, limits: DecodingLimits) throws(ImageError)
        -> any AnimationFrameCursor
    {
        try AVIFAnimationCursor(data: data)
    }
}
#endif
