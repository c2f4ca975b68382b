import ImageKit

extension ProcessingContext {
    /// Whether a video source is answered as video (`@mp4`, `format(webm)`, `gifv()` with no
    /// still, sheet or preview asked): its frames, resized and filtered, written again.
    var transcodesVideo: Bool {
        video != nil && operations.videoStills == nil && !operations.still
            && (operations.format?.videoFormat != nil || operations.animationAsVideo != nil)
    }

    /// What a decode of a video source gives: the sprite sheet or preview asked (`vtt`, `vta`),
    /// every frame for a video answered as video, else the frame at the request's time — each
    /// frame converted straight to the size `options` asks.
    func decodeVideo(_ video: VideoFrameSource, _ options: ImageDecodingOptions) throws(ImageServiceError)
        -> DecodedImage
    {
        if let stills = operations.videoStills {
            let start = operations.videoTime ?? processor.videoThumbnailSecond
            return try render(VideoStillsLayout(stills, info: video.info, start: start), video)
        }
        if transcodesVideo {
            return try render(transcodeLayout(video.info, box: options.thumbnailPixelSize), video)
        }
        do {
            let frame = try video.frame(
                at: operations.videoTime ?? processor.videoThumbnailSecond,
                mode: operations.videoKeyframes ? .keyframe : .exact, fitting: options.thumbnailPixelSize)
            return DecodedImage(frames: [ImageFrame(bitmap: frame.bitmap)], format: .unknown)
        } catch {
            throw ImageServiceError(error)
        }
    }

    /// Every frame from the request's time (0 unless it says) to the end, each sampled in the
    /// middle of its interval (so that a rate like 29.97 never lands a frame's start a tick early
    /// and shows its predecessor twice), fitted in `box`.
    private func transcodeLayout(_ info: VideoFrameSource.Info, box: PixelSize?) -> VideoStillsLayout {
        let rate = info.frameRate > 0 ? min(info.frameRate, 120) : 25
        let start = operations.videoTime ?? 0
        let frames = max(1, Int(((info.duration - start) * rate).rounded(.up)))
        var stills = ImageOperations.VideoStills(
            layout: .animation(frames: frames, delay: 0), step: 1 / rate, width: box?.width ?? 0,
            height: box?.height ?? 0)
        stills.trim = true
        return VideoStillsLayout(stills, info: info, start: start + 0.5 / rate, frameDuration: 1 / rate)
    }

    /// A layout's frames, within the processor's limits: at most ``ImageProcessor/maxVideoStills``
    /// frames for a sheet or preview (``ImageProcessor/maxVideoOutputFrames`` for a video answered
    /// as video), a sheet within the pixel limit, and all of an animation's frames together too.
    private func render(_ layout: VideoStillsLayout, _ video: VideoFrameSource) throws(ImageServiceError)
        -> DecodedImage
    {
        let frames = layout.frameTimes.count
        let most = transcodesVideo ? processor.maxVideoOutputFrames : processor.maxVideoStills
        guard frames <= most else {
            throw ImageServiceError(.tooManyPixels, "\(frames) video frames asked, over \(most)")
        }
        let size = layout.outputSize
        let pixels = size.width * size.height * (layout.isSprite ? 1 : frames)
        guard pixels <= processor.maxPixels else {
            throw ImageServiceError(
                .tooManyPixels,
                "\(layout.isSprite ? 1 : frames) pictures of \(size.width)x\(size.height) video frames are over "
                    + "\(processor.maxPixels) pixels")
        }
        do {
            return try layout.render(
                video, mode: operations.videoKeyframes ? .keyframe : .exact,
                deadline: ContinuousClock.now + processor.videoDeadline)
        } catch {
            throw ImageServiceError(error)
        }
    }
}
