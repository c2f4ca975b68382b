import Foundation
import FuzzSupport
import ImageKit

/// Videos (ik_video.c over libavformat, libavcodec and libswscale): a container from the
/// fuzzer's bytes, its facts, and the frame at a fuzzer-chosen time in either seek mode, at full
/// size or fitted to a box. Limits small enough that a hostile header cannot make a run slow.
let limits = VideoFrameSource.Limits(maxPixels: 4 << 20, maxDecodedFrames: 64)
exit(
    runFuzzer { input in
        let flags = input.byte()
        let tenths = input.byte()
        guard let video = try? VideoFrameSource(data: input.data, limits: limits) else { return }
        _ = video.info
        _ = try? video.frame(
            at: Double(tenths) / 10, mode: flags & 1 == 0 ? .exact : .keyframe,
            fitting: flags & 2 == 0 ? nil : PixelSize(width: 33, height: 20))
    })
