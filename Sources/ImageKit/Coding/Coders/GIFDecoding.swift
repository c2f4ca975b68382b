internal import CGIF
internal import CImageCodecs
import Foundation

/// One GIF decode: the record loop and the compositing state.
struct GIFDecoding {
    let bytes: UnsafeRawBufferPointer
    let options: ImageDecodingOptions
    let completeFramesOnly: Bool

    func run() throws(ImageError) -> DecodedImage {
        try GIFDecoding.withOpenFile(bytes) { gif, reader throws(ImageError) in try decodeAll(gif, reader: reader) }
    }

    /// Opens `bytes` with giflib (header, screen descriptor, global palette) and runs `body`.
    static func withOpenFile<Result>(
        _ bytes: UnsafeRawBufferPointer,
        _ body: (UnsafeMutablePointer<GifFileType>, GIFMemoryReader) throws(ImageError) -> Result
    )
        throws(ImageError) -> Result
    {
        let (gif, reader) = try open(bytes)
        defer { close(gif) }
        return try withExtendedLifetime(reader) { () throws(ImageError) -> Result in try body(gif, reader) }
    }

    /// A giflib session over `bytes`, which must stay valid until ``close(_:)``; the reader
    /// must be kept alive as long (giflib holds it unretained).
    static func open(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> (
        UnsafeMutablePointer<GifFileType>, GIFMemoryReader
    ) {
        guard bytes.count > 0 else { throw ImageError(.emptyData, "the GIF data is empty") }
        let reader = GIFMemoryReader(bytes)
        var openError: Int32 = 0
        let opened = withExtendedLifetime(reader) {
            DGifOpen(Unmanaged.passUnretained(reader).toOpaque(), GIFMemoryReader.read, &openError)
        }
        guard let gif = opened else {
            throw reader.hitEnd
                ? ImageError(.truncatedData, "GIF header is cut short")
                : ImageError(.badImageData, "GIF: \(message(openError))")
        }
        return (gif, reader)
    }

    static func close(_ gif: UnsafeMutablePointer<GifFileType>) {
        var closeError: Int32 = 0
        DGifCloseFile(gif, &closeError)
    }

    static func message(_ code: Int32) -> String {
        if let text = GifErrorString(code) { return String(cString: text) }
        return "giflib error \(code)"
    }

    private func failure(_ gif: UnsafeMutablePointer<GifFileType>, _ reader: GIFMemoryReader, _ what: String)
        -> ImageError
    {
        if reader.hitEnd {
            return ImageError(.truncatedData, "GIF data ends inside \(what) (\(Self.message(gif.pointee.Error)))")
        }
        if gif.pointee.Error == D_GIF_ERR_NOT_ENOUGH_MEM {
            return ImageError(.internalError, "GIF: out of memory")
        }
        return ImageError(.badImageData, "GIF \(what): \(Self.message(gif.pointee.Error))")
    }

    /// The whole image: every frame, scaled to the decode target, the last one without a copy.
    private func decodeAll(_ gif: UnsafeMutablePointer<GifFileType>, reader: GIFMemoryReader) throws(ImageError)
        -> DecodedImage
    {
        let screenWidth = Int(gif.pointee.SWidth), screenHeight = Int(gif.pointee.SHeight)
        let screen = PixelSize(width: screenWidth, height: screenHeight)
        // The scale-down budget is shared by all frames, so count them first (a walk over the
        // block structure, no LZW decoding) — only when it matters.
        let frameCount =
            options.scaleDownLimitBytes != nil && !options.firstFrameOnly ? GIFStructure.imageCount(bytes) : 1
        let target = DecodeTarget.size(for: screen, frames: max(frameCount, 1), options: options)
        try options.limits.checkPixels(width: screenWidth, height: screenHeight)
        try options.limits.check(width: screenWidth, height: screenHeight)  // the canvas is always full size
        // The canvas and a copy of it for dispose-to-previous, whatever the output size.
        try options.limits.checkWorking(
            2 * screenWidth * screenHeight * 4, outputBytes: target.width * target.height * 4 * max(frameCount, 1),
            "the GIF's \(screen) canvas")
        let frameBytes = target.width * target.height * 4

        var state = try GIFRunState(screen: screen)
        var frames: [ImageFrame] = []
        let early = try advance(gif, reader: reader, state: &state) {
            (canvas: borrowing AnimationCanvas, duration: Double) throws(ImageError) -> Bool in
            let total = (frames.count + 1) * frameBytes + 2 * screenWidth * screenHeight * 4
            guard total <= options.limits.maxTotalBytes else {
                throw ImageError(
                    .decompressionBomb, "the GIF's frames need more than \(options.limits.maxTotalBytes) bytes")
            }
            frames.append(ImageFrame(bitmap: try canvas.frame(size: target), duration: duration))
            return true
        }
        if let early { return try early(frames, target) }
        guard let last = state.position.pending else { throw ImageError(.zeroPixels, "the GIF has no image") }
        var lastFrame = state.canvas.finish(isOpaque: state.position.pendingIsOpaque)
        if target != screen { lastFrame = try lastFrame.resized(to: target) }
        frames.append(ImageFrame(bitmap: lastFrame, duration: last.duration))
        if frames.count == 1 {
            frames[0].duration = 0
            return DecodedImage(frames: frames, loopCount: 1, format: .gif)
        }
        return DecodedImage(frames: frames, loopCount: state.position.loopCount ?? 1, format: .gif)
    }

    /// How a decode that ends inside the data finishes, given the frames emitted so far and the
    /// output size: the partial-image and complete-frames-only rules.
    typealias EarlyEnd = ([ImageFrame], PixelSize) throws(ImageError) -> DecodedImage

    /// Runs the record loop from `state` (a fresh state starts after the screen descriptor):
    /// each frame is drawn onto the canvas and handed to `emit` with its duration once the next
    /// frame begins — before its disposal — except the last, which stays in `state.position.pending` when
    /// the data ends. `emit` returning false stops the loop right after that frame, with `state`
    /// ready to resume at the next one. Returns an early result only for the partial-image and
    /// complete-frames-only endings.
    func advance(
        _ gif: UnsafeMutablePointer<GifFileType>, reader: GIFMemoryReader, state: inout GIFRunState,
        emit: (borrowing AnimationCanvas, Double) throws(ImageError) -> Bool
    ) throws(ImageError) -> EarlyEnd? {
        // Resuming in the same session after a stop: the reader stands after the descriptor.
        var suspended = state.suspendedInSession
        state.suspendedInSession = nil
        if suspended == nil, let offset = state.position.offset { reader.offset = offset }
        var indices = [UInt8]()
        var done = false
        var drawing = false
        var partialDelay: Int32 = 0

        while !done {
            do throws(ImageError) {
                var record = UNDEFINED_RECORD_TYPE
                var descriptorStart = 0
                var wide: WideCodeFrame?
                if let resumed = suspended {
                    suspended = nil
                    record = IMAGE_DESC_RECORD_TYPE
                    descriptorStart = resumed.descriptorStart
                    wide = resumed.wide
                } else {
                    // Between records, as browsers do: the end of the data after a frame is the end
                    // of the image (a missing trailer), and a byte that starts no record is skipped
                    // (giflib's stream reader stops at both).
                    if reader.offset >= bytes.count && state.position.pending != nil {
                        done = true
                        continue
                    }
                    if reader.offset < bytes.count, ![0x2C, 0x21, 0x3B].contains(bytes[reader.offset]) {
                        reader.offset += 1
                        continue
                    }
                    guard DGifGetRecordType(gif, &record) == GIF_OK else { throw failure(gif, reader, "a record") }
                    if record == IMAGE_DESC_RECORD_TYPE {
                        // Police the frame's extent from the raw descriptor before giflib sets up
                        // its decoder: the extent is what giflib decodes, and its far corner is the
                        // canvas other decoders grow to.
                        try checkFrameExtent(reader)
                        descriptorStart = reader.offset
                        if DGifGetImageDesc(gif) != GIF_OK {
                            // giflib sets up LZW for code sizes up to 8 (the GIF maximum); browsers
                            // decode up to 11. Any other failure stays giflib's.
                            guard let frame = WideCodeFrame(bytes, descriptorAt: descriptorStart) else {
                                throw failure(gif, reader, "an image descriptor")
                            }
                            wide = frame
                        }
                        // giflib keeps a record per image it has read; a long playback must not grow it.
                        GifFreeSavedImages(gif)
                        gif.pointee.ImageCount = 0
                    }
                }
                switch record {
                case IMAGE_DESC_RECORD_TYPE:
                    // Finish the previous frame: hand its picture over, then dispose of it.
                    if let previous = state.position.pending {
                        if !state.position.pendingEmitted {
                            state.position.pendingEmitted = true
                            state.position.emittedCount += 1
                            if try !emit(state.canvas, previous.duration) {
                                // A new session resumes at this descriptor's record byte and reads it
                                // again; this one goes on from here.
                                state.position.offset = descriptorStart - 1
                                state.suspendedInSession = (descriptorStart, wide)
                                return nil
                            }
                        }
                        if previous.disposal == DISPOSE_BACKGROUND {
                            state.canvas.clear(previous.rect)
                        } else if previous.disposal == DISPOSE_PREVIOUS, let saved = previous.saved {
                            state.canvas.restore(previous.rect, from: saved)
                        }
                    }
                    let desc = gif.pointee.Image
                    let frameWidth = Int(desc.Width), frameHeight = Int(desc.Height)
                    let rect = state.canvas.clip(
                        x: Int(desc.Left), y: Int(desc.Top), width: frameWidth, height: frameHeight)
                    let saved =
                        state.position.control.DisposalMode == DISPOSE_PREVIOUS
                        ? try state.canvas.snapshot(isOpaque: false) : nil
                    let colorMap = desc.ColorMap ?? gif.pointee.SColorMap
                    drawing = true
                    partialDelay = state.position.control.DelayTime
                    let transparent = Int(state.position.control.TransparentColor)
                    try drawFrame(
                        desc: desc, descriptorStart: descriptorStart, strict: wide != nil, reader: reader,
                        canvas: &state.canvas, colorMap: colorMap, transparent: transparent, indices: &indices)
                    drawing = false
                    state.position.pending = (
                        GIFStructure.duration(centiseconds: Int(state.position.control.DelayTime)),
                        state.position.control.DisposalMode, rect, saved
                    )
                    state.position.pendingEmitted = false
                    state.position.pendingIsOpaque =
                        transparent < 0
                        && rect
                            == AnimationCanvas.Rect(x: 0, y: 0, width: state.canvas.width, height: state.canvas.height)
                    state.position.control = GIFRunState.noControl
                    if options.firstFrameOnly { done = true }

                case EXTENSION_RECORD_TYPE:
                    try readExtension(
                        gif, reader: reader, control: &state.position.control, loopCount: &state.position.loopCount)

                case TERMINATE_RECORD_TYPE:
                    done = true

                default:
                    throw ImageError(.badImageData, "GIF: unknown record type")
                }
            } catch
                where !completeFramesOnly && error.code == .truncatedData && !drawing && state.position.pending != nil
            {
                // Cut between or inside the blocks after a complete frame: the frames are all here.
                done = true
            } catch  where !completeFramesOnly && error.code == .truncatedData && drawing && options.allowsPartialImages
            {
                // Cut inside image data: what was drawn, as a partial last frame (never cached).
                let loopCount = state.position.loopCount
                let partial = try state.canvas.snapshot(isOpaque: false)
                let centiseconds = Int(partialDelay)
                return { (emitted: [ImageFrame], target: PixelSize) throws(ImageError) -> DecodedImage in
                    var frames = emitted
                    var last = partial
                    if target != PixelSize(width: last.width, height: last.height) {
                        last = try last.resized(to: target)
                    }
                    frames.append(ImageFrame(bitmap: last, duration: GIFStructure.duration(centiseconds: centiseconds)))
                    if frames.count == 1 { frames[0].duration = 0 }
                    return DecodedImage(
                        frames: frames, loopCount: frames.count == 1 ? 1 : loopCount ?? 1, format: .gif, isPartial: true
                    )
                }
            } catch
                where completeFramesOnly && error.code == .truncatedData
                && (state.position.pending != nil || state.position.emittedCount > 0)
            {
                // Keep what is complete: a frame cut mid-draw is dropped (its predecessor was
                // already emitted, and the canvas now holds half a frame).
                if drawing {
                    let loopCount = state.position.loopCount
                    return { (emitted: [ImageFrame], _: PixelSize) throws(ImageError) -> DecodedImage in
                        guard !emitted.isEmpty else { throw error }
                        return DecodedImage(frames: emitted, loopCount: loopCount ?? 1, format: .gif)
                    }
                }
                done = true
            }
        }
        state.position.offset = reader.offset
        state.position.isAtEnd = true
        return nil
    }

    /// Checks the image descriptor that follows the reader's position (left, top, width,
    /// height: little-endian 16-bit values).
    private func checkFrameExtent(_ reader: GIFMemoryReader) throws(ImageError) {
        let start = reader.offset
        guard start + 8 <= bytes.count else { return }  // giflib reports the truncation
        func u16(_ at: Int) -> Int { Int(bytes[start + at]) | Int(bytes[start + at + 1]) << 8 }
        let left = u16(0), top = u16(2), width = u16(4), height = u16(6)
        guard width > 0, height > 0 else { return }
        try options.limits.check(width: width, height: height)
        try options.limits.check(width: left + width, height: top + height)
    }

    private func readExtension(
        _ gif: UnsafeMutablePointer<GifFileType>, reader: GIFMemoryReader,
        control: inout GraphicsControlBlock, loopCount: inout Int?
    ) throws(ImageError) {
        var code: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        guard DGifGetExtension(gif, &code, &block) == GIF_OK else { throw failure(gif, reader, "an extension") }
        var isLoopApplication = false
        var first = true
        while let current = block {
            let length = Int(current[0])
            if code == GRAPHICS_EXT_FUNC_CODE && first && length >= 4 {
                DGifExtensionToGCB(length, current + 1, &control)
            } else if code == APPLICATION_EXT_FUNC_CODE && first && length == 11 {
                let name = String(decoding: UnsafeBufferPointer(start: current + 1, count: 11), as: UTF8.self)
                isLoopApplication = name == "NETSCAPE2.0" || name == "ANIMEXTS1.0"
            } else if isLoopApplication && !first && length >= 3 && current[1] == 1 && loopCount == nil {
                loopCount = Int(current[2]) | Int(current[3]) << 8
            }
            first = false
            guard DGifGetExtensionNext(gif, &block) == GIF_OK else { throw failure(gif, reader, "an extension") }
        }
    }

    /// Decodes the image data of the frame whose descriptor starts at `descriptorStart` (after the
    /// 0x2C) straight from the bytes and draws it onto the canvas, leaving the reader after its
    /// block terminator. `strict`: the browsers' rules for the code sizes giflib refuses (9-11);
    /// otherwise giflib's, whose decoder this replaces (its errors and its partial lines too).
    private func drawFrame(
        desc: GifImageDesc, descriptorStart: Int, strict: Bool, reader: GIFMemoryReader,
        canvas: inout AnimationCanvas, colorMap: UnsafeMutablePointer<ColorMapObject>?, transparent: Int,
        indices: inout [UInt8]
    ) throws(ImageError) {
        let width = Int(desc.Width), height = Int(desc.Height)
        guard width > 0, height > 0 else { return }
        // Palette as RGBA words; indices past the palette's end draw opaque black.
        var palette = [UInt32](repeating: 0xFF00_0000, count: 256)
        if let colorMap, let colors = colorMap.pointee.Colors {
            for index in 0..<min(Int(colorMap.pointee.ColorCount), 256) {
                let color = colors[index]
                palette[index] = UInt32(color.Red) | UInt32(color.Green) << 8 | UInt32(color.Blue) << 16 | 0xFF00_0000
            }
        }
        let pixelCount = width * height
        // The decoder uses IK_GIF_LZW_SLACK bytes past the last index; it writes every index it
        // reports, so the buffer needs no zeroing.
        let needed = pixelCount + Int(IK_GIF_LZW_SLACK)
        if indices.count < needed {
            indices = [UInt8](unsafeUninitializedCapacity: needed) { _, count in count = needed }
        }
        var decoded = 0, end = 0
        let status = indices.withUnsafeMutableBufferPointer { output in
            ik_gif_lzw_decode(
                bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count,
                GIFStructure.imageDataOffset(bytes, descriptorAt: descriptorStart), strict ? 1 : 0,
                output.baseAddress!, pixelCount, &decoded, &end)
        }
        // giflib drew a line once it was whole and read the next; its last line failed when the
        // blocks after it were cut short.
        let drawn = status == IK_GIF_LZW_TRAILING_TRUNCATED ? pixelCount - width : decoded
        if drawn >= width {
            indices.withUnsafeBufferPointer { indices in
                palette.withUnsafeBufferPointer { palette in
                    ik_gif_draw(
                        indices.baseAddress!, drawn, Int32(width), Int32(height), desc.Interlace ? 1 : 0,
                        Int32(desc.Left), Int32(desc.Top), palette.baseAddress!, Int32(transparent),
                        canvas.pixels.row(0), canvas.pixels.bytesPerRow, Int32(canvas.width), Int32(canvas.height))
                }
            }
        }
        switch status {
        case IK_GIF_LZW_OK:
            reader.offset = end
        case IK_GIF_LZW_TRUNCATED, IK_GIF_LZW_TRAILING_TRUNCATED:
            reader.offset = bytes.count
            reader.hitEnd = true
            throw ImageError(.truncatedData, "GIF data ends inside image data (\(decoded) of \(pixelCount) pixels)")
        case IK_GIF_LZW_EARLY_END where strict, IK_GIF_LZW_SHORT_DATA where strict:
            throw ImageError(
                .truncatedData, "GIF: the wide-code frame's data ends after \(decoded) of \(pixelCount) pixels")
        case IK_GIF_LZW_EARLY_END:
            throw ImageError(.badImageData, "GIF image data: an end code after \(decoded) of \(pixelCount) pixels")
        case IK_GIF_LZW_SHORT_DATA:
            throw ImageError(.badImageData, "GIF image data: the blocks end after \(decoded) of \(pixelCount) pixels")
        default:
            throw ImageError(
                .badImageData, "GIF image data: an LZW code that cannot be decoded after \(decoded) pixels")
        }
    }
}
