internal import CWebP
import Foundation

/// An animated WebP's frames as the container describes them (libwebp's demuxer), without
/// decoding any: canvas size, loop count, and per frame its rectangle, duration, blend and
/// dispose methods and where its bitstream lies.
struct WebPAnimation {
    struct Frame {
        var x: Int, y: Int, width: Int, height: Int
        /// Seconds.
        var duration: Double
        var disposesToBackground: Bool
        var blends: Bool
        var hasAlpha: Bool
        /// The frame's bitstream (ALPH + VP8, or VP8L) within the file.
        var bitstream: Range<Int>
    }

    var width = 0, height = 0
    var loopCount = 0
    var frames: [Frame] = []

    init(_ bytes: UnsafeRawBufferPointer) throws(ImageError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw ImageError(.emptyData, "the WebP data is empty")
        }
        var data = WebPData(bytes: base.assumingMemoryBound(to: UInt8.self), size: bytes.count)
        guard let demuxer = WebPDemux(&data) else {
            if WebPCoder.riffDeclaredSize(bytes) > bytes.count {
                throw ImageError(.truncatedData, "animated WebP: the data ends early")
            }
            throw ImageError(.badImageData, "animated WebP: the file is corrupt")
        }
        defer { WebPDemuxDelete(demuxer) }
        width = Int(WebPDemuxGetI(demuxer, WEBP_FF_CANVAS_WIDTH))
        height = Int(WebPDemuxGetI(demuxer, WEBP_FF_CANVAS_HEIGHT))
        loopCount = Int(WebPDemuxGetI(demuxer, WEBP_FF_LOOP_COUNT))
        var iterator = WebPIterator()
        guard WebPDemuxGetFrame(demuxer, 1, &iterator) != 0 else {
            throw ImageError(.zeroPixels, "animated WebP has no frames")
        }
        defer { WebPDemuxReleaseIterator(&iterator) }
        repeat {
            guard let fragment = iterator.fragment.bytes else {
                throw ImageError(.badImageData, "animated WebP: a frame has no data")
            }
            let start = UnsafeRawPointer(fragment) - UnsafeRawPointer(base)
            frames.append(
                Frame(
                    x: Int(iterator.x_offset), y: Int(iterator.y_offset), width: Int(iterator.width),
                    height: Int(iterator.height), duration: Double(iterator.duration) / 1000,
                    disposesToBackground: iterator.dispose_method == WEBP_MUX_DISPOSE_BACKGROUND,
                    blends: iterator.blend_method == WEBP_MUX_BLEND, hasAlpha: iterator.has_alpha != 0,
                    bitstream: start..<start + iterator.fragment.size))
        } while WebPDemuxNextFrame(&iterator) != 0
        for frame in frames {
            guard frame.width > 0, frame.height > 0, frame.x + frame.width <= width, frame.y + frame.height <= height
            else {
                throw ImageError(.badImageData, "animated WebP: a frame lies outside the canvas")
            }
        }
    }

    /// Whether frame `index` covers the canvas so that nothing before it shows through
    /// (libwebp's key-frame rule): the canvas can be cleared instead of carried over.
    func isKeyFrame(_ index: Int, previousWasKey: Bool) -> Bool {
        let frame = frames[index]
        if index == 0 { return true }
        if (!frame.hasAlpha || !frame.blends) && frame.width == width && frame.height == height { return true }
        let previous = frames[index - 1]
        return previous.disposesToBackground
            && ((previous.width == width && previous.height == height) || previousWasKey)
    }
}

/// Where an animated WebP decode stands between frames: the canvas with the last frame drawn
/// and disposed of (libwebp's "previous frame disposed" canvas).
struct WebPRunState: AnimationRunState, ~Copyable {
    struct Position {
        var nextIndex = 0
        var previousWasKey = false
    }

    var canvas: AnimationCanvas
    var position = Position()
    /// A frame-sized RGBA buffer the bitstreams are decoded into, reused.
    var scratch: [UInt8] = []

    init(_ animation: WebPAnimation) throws(ImageError) {
        canvas = try AnimationCanvas(width: animation.width, height: animation.height)
    }

    init(canvas: consuming AnimationCanvas, position: Position) {
        self.canvas = canvas
        self.position = position
    }

    /// Ends the run and hands the canvas over as a frame, without a copy.
    consuming func finish() -> Bitmap {
        canvas.finish(isOpaque: false)
    }
}

extension WebPAnimation {
    /// Draws frame `state.position.nextIndex` the way libwebp's `WebPAnimDecoder` does — pixel for pixel:
    /// its non-premultiplied integer blend, applied where the frame is translucent, except over
    /// the previous frame's rectangle when that was disposed to the background — and hands the
    /// composited canvas to `show` before disposing of the frame. Returns its duration.
    func drawNextFrame(
        _ bytes: UnsafeRawBufferPointer, state: inout WebPRunState,
        show: (borrowing AnimationCanvas) throws(ImageError) -> Void
    ) throws(ImageError) -> Double {
        let index = state.position.nextIndex
        let frame = frames[index]
        let isKey = isKeyFrame(index, previousWasKey: state.position.previousWasKey)
        if isKey { state.canvas.clear(state.canvas.clip(x: 0, y: 0, width: width, height: height)) }

        let blends = index > 0 && frame.blends && !isKey
        let previous = index > 0 ? frames[index - 1] : nil
        if !blends {
            // Straight onto the canvas, as libwebp does.
            let stride = state.canvas.pixels.bytesPerRow
            let target = UnsafeMutableRawPointer(state.canvas.pixels.row(frame.y) + frame.x * 4)
            try decodeFrame(
                index, bytes, into: target, stride: stride, size: stride * (frame.height - 1) + frame.width * 4)
        } else {
            let rowBytes = frame.width * 4
            let count = rowBytes * frame.height
            if state.scratch.count < count {
                // Every byte is written by the decode: no need to clear it.
                state.scratch = [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
            }
            let failure = state.scratch.withUnsafeMutableBytes {
                (scratch: UnsafeMutableRawBufferPointer) -> ImageError? in
                do throws(ImageError) {
                    try decodeFrame(index, bytes, into: scratch.baseAddress!, stride: rowBytes, size: count)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { throw failure }
            state.scratch.withUnsafeBytes { scratch in
                for row in 0..<frame.height {
                    let canvasY = frame.y + row
                    let source = (scratch.baseAddress! + row * rowBytes).assumingMemoryBound(to: UInt32.self)
                    let destination = UnsafeMutableRawPointer(state.canvas.pixels.row(canvasY) + frame.x * 4)
                        .assumingMemoryBound(to: UInt32.self)
                    // Over the previous frame's rectangle disposed to the background, libwebp keeps
                    // the decoded pixels as they are (blending over transparent would round them).
                    var skip = 0..<0
                    if let previous, previous.disposesToBackground, canvasY >= previous.y,
                        canvasY < previous.y + previous.height
                    {
                        skip =
                            max(
                                previous.x, frame.x)..<max(
                                min(previous.x + previous.width, frame.x + frame.width), max(previous.x, frame.x))
                    }
                    for column in 0..<frame.width {
                        let s = source[column]
                        if s >> 24 == 0xFF || skip.contains(frame.x + column) {
                            destination[column] = s
                        } else {
                            destination[column] = Self.blendNonPremultiplied(s, over: destination[column])
                        }
                    }
                }
            }
        }
        try show(state.canvas)
        if frame.disposesToBackground {
            state.canvas.clear(state.canvas.clip(x: frame.x, y: frame.y, width: frame.width, height: frame.height))
        }
        state.position.previousWasKey = isKey
        state.position.nextIndex += 1
        return frame.duration
    }

    /// Decodes frame `index`'s bitstream as straight RGBA into `output` (rows `stride` apart).
    private func decodeFrame(
        _ index: Int, _ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer,
        stride: Int, size: Int
    ) throws(ImageError) {
        let frame = frames[index]
        var config = WebPDecoderConfig()
        guard WebPInitDecoderConfig(&config) != 0 else { throw ImageError(.internalError, "libwebp version mismatch") }
        let input = (bytes.baseAddress! + frame.bitstream.lowerBound).assumingMemoryBound(to: UInt8.self)
        guard WebPGetFeatures(input, frame.bitstream.count, &config.input) == VP8_STATUS_OK,
            Int(config.input.width) == frame.width, Int(config.input.height) == frame.height
        else {
            throw ImageError(.badImageData, "animated WebP: frame \(index) does not match its rectangle")
        }
        config.output.colorspace = MODE_RGBA
        config.output.is_external_memory = 1
        config.output.u.RGBA.rgba = output.assumingMemoryBound(to: UInt8.self)
        config.output.u.RGBA.stride = Int32(stride)
        config.output.u.RGBA.size = size
        config.options.use_threads = 0
        let status = WebPDecode(input, frame.bitstream.count, &config)
        guard status == VP8_STATUS_OK else { throw WebPCoder.error(status, "animated WebP frame \(index)") }
    }

    /// libwebp's `BlendPixelNonPremult`: straight-alpha "over" in its integer approximation.
    @inline(__always)
    static func blendNonPremultiplied(_ source: UInt32, over destination: UInt32) -> UInt32 {
        let sourceAlpha = source >> 24
        guard sourceAlpha != 0 else { return destination }
        let destinationAlpha = destination >> 24
        let destinationFactor = (destinationAlpha * (256 - sourceAlpha)) >> 8
        let blendAlpha = sourceAlpha + destinationFactor
        let scale = (UInt32(1) << 24) / blendAlpha
        func channel(_ shift: UInt32) -> UInt32 {
            let unscaled =
                ((source >> shift) & 0xFF) * sourceAlpha + ((destination >> shift) & 0xFF) * destinationFactor
            return (unscaled * scale) >> 24
        }
        return channel(0) | channel(8) << 8 | channel(16) << 16 | blendAlpha << 24
    }
}
