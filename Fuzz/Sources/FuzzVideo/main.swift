import Foundation
import FuzzSupport
import ImageKit

/// Videos (ik_video.c over libavformat, libavcodec and libswscale): a container from the
/// fuzzer's bytes, its facts, the frame at a fuzzer-chosen time in either seek mode, at full size
/// or fitted to an odd box, then a later frame (decoding on from the first), and with a flag both
/// written back as MP4 or WebM (ik_video_writer.c). Limits small enough that a hostile header
/// cannot make a run slow.
let limits = VideoFrameSource.Limits(maxPixels: 4 << 20, maxDecodedFrames: 64)
exit(
    runFuzzer { input in
        let flags = input.byte()
        let tenths = input.byte()
        guard let video = try? VideoFrameSource(data: input.data, limits: limits) else { return }
        _ = video.info
        let box = flags & 2 == 0 ? nil : PixelSize(width: 33, height: 20)
        let mode: VideoFrameSource.SeekMode = flags & 1 == 0 ? .exact : .keyframe
        guard let first = try? video.frame(at: Double(tenths) / 10, mode: mode, fitting: box) else { return }
        let later = try? video.frame(at: Double(tenths) / 10 + Double(input.byte()) / 50, mode: .exact, fitting: box)
        guard flags & 4 != 0, let later, later.bitmap.width == first.bitmap.width,
            later.bitmap.height == first.bitmap.height
        else { return }
        let frames = [
            ImageFrame(bitmap: first.bitmap, duration: 0.04), ImageFrame(bitmap: later.bitmap, duration: 0.1),
        ]
        _ = try? VideoWriter.encode(DecodedImage(frames: frames, format: .unknown), as: flags & 8 == 0 ? .mp4 : .webm)
    })
