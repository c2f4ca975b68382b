internal import CImageCodecs
import Foundation

// APNG: the frames drawn one after another on a canvas, as their disposal and blending say.
extension PNGCoder {
    /// Every frame (or the first) of an APNG, each scaled to the decode target.
    static func decodeAnimation(
        _ animation: APNGAnimation, bytes: UnsafeRawBufferPointer,
        options: ImageDecodingOptions
    ) throws(ImageError) -> DecodedImage {
        let frameCount = options.firstFrameOnly ? 1 : animation.frames.count
        let canvasSize = PixelSize(width: animation.width, height: animation.height)
        let target = DecodeTarget.size(for: canvasSize, frames: frameCount, options: options)
        try options.limits.checkPixels(width: canvasSize.width, height: canvasSize.height)
        try options.limits.check(width: target.width, height: target.height, frames: frameCount)
        // The full-size canvas and a copy of it for dispose-to-previous.
        try options.limits.checkWorking(
            2 * canvasSize.pixelCount * 4, outputBytes: target.pixelCount * 4 * frameCount,
            "the APNG's \(canvasSize) canvas")
        var state = try APNGRunState(animation)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(frameCount)
        for _ in 0..<frameCount {
            let duration = try drawNextFrame(animation, bytes: bytes, limits: options.limits, state: &state)
            var snapshot = try state.canvas.snapshot(isOpaque: false)
            if target != canvasSize { snapshot = try snapshot.resized(to: target) }
            frames.append(ImageFrame(bitmap: snapshot, duration: duration))
        }
        return DecodedImage(frames: frames, loopCount: frames.count > 1 ? animation.playCount : 1, format: .png)
    }

    /// Draws frame `state.position.nextIndex` of `animation` onto the canvas (after disposing of the
    /// frame before it) and returns its duration. The canvas then shows the frame; its own
    /// disposal waits for the next call.
    static func drawNextFrame(
        _ animation: APNGAnimation, bytes: UnsafeRawBufferPointer, limits: DecodingLimits,
        state: inout APNGRunState
    ) throws(ImageError) -> Double {
        if let pending = state.position.pending {
            switch pending.dispose {
            case 1: state.canvas.clear(pending.rect)
            case 2: if let saved = pending.saved { state.canvas.restore(pending.rect, from: saved) }
            default: break
            }
            state.position.pending = nil
        }
        let index = state.position.nextIndex
        let frame = animation.frames[index]
        let rect = state.canvas.clip(x: frame.x, y: frame.y, width: frame.width, height: frame.height)
        var dispose = frame.dispose
        if index == 0 && dispose == 2 { dispose = 1 }  // nothing to go back to: clear instead
        let saved = dispose == 2 ? try state.canvas.snapshot(isOpaque: false) : nil

        let pixels: Bitmap
        if frame.usesDefaultImage && frame.width == animation.width && frame.height == animation.height {
            pixels = try decodeStill(bytes, limits: limits, ignoreCRC: false)
        } else {
            let stream = animation.standalonePNG(for: frame, from: bytes)
            pixels = try stream.withImageBytes { stream throws(ImageError) in
                try decodeStill(stream, limits: limits, ignoreCRC: true)
            }
        }
        state.canvas.draw(pixels, x: frame.x, y: frame.y, blend: frame.blend == 1 && index > 0)
        state.position.pending = (dispose, rect, saved)
        state.position.nextIndex += 1
        return frame.delay
    }
}
