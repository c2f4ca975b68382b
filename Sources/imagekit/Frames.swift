import ArgumentParser
import Foundation
import ImageKit

struct Frames: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Walk every frame of an animation (GIF, APNG, WebP, AVIF, JPEG XL) through ImageKit's player.",
        discussion: """
            Frames are decoded on demand (AnimatedImage) and played once through AnimatedImagePlayer on a \
            virtual clock, so nothing waits for real time. Prints one line per frame (index, duration, \
            SHA-256 of the canvas's RGBA8 pixels with fully transparent pixels as 0,0,0,0 — the rule of \
            'info --pixels'), or with --json one object per frame {index, duration, sha256} and a last \
            object {frames, peakBufferBytes}. --out writes each frame as frame-NNNN.png.
            """
    )

    @Argument(help: "An animated GIF, APNG, WebP, AVIF or JPEG XL.") var input: String
    @Option(help: "Write each frame as a PNG into this directory.") var out: String?
    @Option(help: "The player's buffer limit in bytes (default: SDWebImage's rule from the memory available).")
    var maxBufferBytes: Int?
    @Flag(help: "Print JSON lines.") var json = false

    func validate() throws {
        if let maxBufferBytes, maxBufferBytes < 0 { throw ValidationError("--max-buffer-bytes must not be negative") }
    }

    func run() throws {
        // Mapped: the animation decodes from the file's pages and holds no copy of them.
        let data = try readFile(input, mapped: true)
        let animation: AnimatedImage
        do { animation = try AnimatedImage(data: data) } catch {
            FileHandle.standardError.write(Data("\(input): \(error)\n".utf8))
            throw ExitCode(1)
        }
        if let out { try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true) }
        let player = AnimatedImagePlayer(animation, loops: 1, maxBufferBytes: maxBufferBytes, clock: VirtualClock())
        let json = self.json, out = self.out
        let outcome = SharedValue<Result<Int, Error>>(.success(0))
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                var count = 0
                for try await frame in player {
                    let digest = frame.bitmap.canonicalSHA256()
                    if json {
                        printJSON(["index": frame.index, "duration": frame.duration, "sha256": digest])
                    } else {
                        print(String(format: "frame %4d  %6.3f s  ", frame.index, frame.duration) + digest)
                    }
                    if let out {
                        let name = String(format: "frame-%04d.png", frame.index)
                        let png = try ImageCodersManager.shared.encode(
                            DecodedImage(frames: [ImageFrame(bitmap: frame.bitmap)], format: .png),
                            as: .png, options: .default)
                        try png.write(to: URL(fileURLWithPath: out).appendingPathComponent(name))
                    }
                    count += 1
                }
                outcome.set(.success(count))
            } catch {
                outcome.set(.failure(error))
            }
            done.signal()
        }
        done.wait()
        switch outcome.value {
        case .success(let count):
            if json {
                printJSON(["frames": count, "peakBufferBytes": player.peakBufferBytes])
            } else {
                print(
                    "\(count) frames, \(animation.loopCount == 0 ? "looping forever" : "\(animation.loopCount) loop(s)"), "
                        + "peak buffer \(player.peakBufferBytes) bytes")
            }
        case .failure(let error):
            FileHandle.standardError.write(Data("\(input): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
