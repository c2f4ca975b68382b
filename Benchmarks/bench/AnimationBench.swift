import Foundation
import ImageKit

/// Animations played through `AnimatedImagePlayer` (frames decoded on demand, one pass on a
/// virtual clock, so only decoding is timed) against the eager decode of every frame, on the
/// same bytes in alternating runs: frames per second and the most pixel memory each held.
struct AnimationBench {
    var options: BenchOptions
    var report: Report

    struct Case {
        var name: String
        var data: Data
    }

    func run() async {
        let cases = self.cases().filter { options.includes($0.name) }
        guard !cases.isEmpty else { return }
        var rows: [[String]] = []
        var limits = DecodingLimits()
        limits.maxTotalBytes = Int.max  // the eager side holds every frame
        var decoding = ImageDecodingOptions.default
        decoding.limits = limits
        for item in cases {
            guard let probe = try? AnimatedImage(data: item.data),
                (try? ImageCodersManager.shared.decode(item.data, options: decoding)) != nil
            else {
                log("skipping \(item.name): not a decodable animation")
                continue
            }
            let frames = Double(probe.frameCount)
            func decodeEagerly() { _ = try? ImageCodersManager.shared.decode(item.data, options: decoding) }
            func play() async {
                guard let image = try? AnimatedImage(data: item.data) else { return }
                do {
                    for try await _ in AnimatedImagePlayer(image, loops: 1, clock: VirtualClock()) {}
                } catch {
                    log("\(item.name): playback failed: \(error)")
                }
            }
            // Warm-ups, which also size the runs: each run repeats its side for about a fifth
            // of --min-time, so that small animations are not timed one 20 µs pass at a time.
            var start = now(); decodeEagerly(); let warmEager = now() - start
            start = now(); await play(); let warmPlayer = now() - start
            let runTime = options.minTime / 5
            let eagerRepeats = max(1, Int(runTime / max(warmEager, 1e-7)))
            let playerRepeats = max(1, Int(runTime / max(warmPlayer, 1e-7)))
            var eagerRates: [Double] = [], playerRates: [Double] = []
            var eagerPeak = 0, playerPeak = 0
            let begin = now()
            while eagerRates.count < 5 || now() - begin < options.minTime * 2 {
                let base = PixelMemory.currentBytes
                PixelMemory.resetPeak()
                start = now()
                for _ in 0..<eagerRepeats { decodeEagerly() }
                eagerRates.append(frames * Double(eagerRepeats) / (now() - start))
                eagerPeak = max(eagerPeak, PixelMemory.peakBytes - base)

                PixelMemory.resetPeak()
                start = now()
                for _ in 0..<playerRepeats { await play() }
                playerRates.append(frames * Double(playerRepeats) / (now() - start))
                playerPeak = max(playerPeak, PixelMemory.peakBytes - base)
                if eagerRates.count >= 100 { break }
            }
            let eager = median(eagerRates), played = median(playerRates)
            rows.append([
                item.name, "\(probe.frameCount)", "\(probe.width)x\(probe.height)", format(played, 0), format(eager, 0),
                format(played / eager, 2), megabytes(playerPeak), megabytes(eagerPeak),
            ])
            report.jsonLine([
                "case": item.name, "frames": probe.frameCount, "width": probe.width, "height": probe.height,
                "player_fps": played, "eager_fps": eager, "ratio": played / eager,
                "player_peak_pixel_bytes": playerPeak, "eager_peak_pixel_bytes": eagerPeak,
            ])
        }
        report.table(
            "Animations: frames per second through the player (one pass) vs the eager decode; peak pixel memory",
            header: ["case", "frames", "canvas", "player fps", "eager fps", "ratio", "player peak", "eager peak"],
            rows: rows)
    }

    private func megabytes(_ bytes: Int) -> String { format(Double(bytes) / 1e6, 1) + " MB" }

    func cases() -> [Case] {
        if let corpus = options.corpus {
            let files = (FileManager.default.enumerator(atPath: corpus)?.allObjects as? [String] ?? []).sorted()
            return files.compactMap { path in
                guard let data = FileManager.default.contents(atPath: corpus + "/" + path) else { return nil }
                let signature = ImageSignature(data)
                guard signature.format == .gif || signature.isAnimated,
                    let image = try? AnimatedImage(data: data), image.frameCount > 1
                else { return nil }
                return Case(name: "animation/\(path)", data: data)
            }
        }
        if let filter = options.filter, !filter.hasPrefix("animation") { return [] }
        log("generating animations…")
        // A sprite moving over a still background: what most animated GIFs and WebPs are.
        let (width, height, count) = options.quick ? (240, 180, 30) : (480, 360, 60)
        let background = SyntheticImages.photo(width: width, height: height, seed: 7)
        let frames = (0..<count).map { index -> ImageFrame in
            let buffer = try! PixelBuffer(width: width, height: height)
            for y in 0..<height {
                background.withRow(y) { buffer.row(y).update(from: $0.baseAddress!, count: width * 4) }
            }
            let side = height / 4, left = index * (width - side) / count, top = (index * 7) % (height - side)
            for y in top..<top + side {
                let row = buffer.row(y)
                for x in left..<left + side {
                    row[x * 4] = 250; row[x * 4 + 1] = UInt8(index * 4 % 256); row[x * 4 + 2] = 40; row[x * 4 + 3] = 255
                }
            }
            return ImageFrame(bitmap: buffer.freeze(isOpaque: true), duration: 0.04)
        }
        let animation = DecodedImage(frames: frames, loopCount: 0, format: .gif)
        var cases: [Case] = []
        for (name, format, encoding) in [
            ("gif", ImageFormat.gif, ImageEncodingOptions.default),
            ("webp-q80", .webp, ImageEncodingOptions(quality: 0.8)),
        ] {
            if let data = try? ImageCodersManager.shared.encode(animation, as: format, options: encoding) {
                cases.append(Case(name: "animation/\(name)-\(count)f/\(width)x\(height)", data: data))
            }
        }
        return cases
    }
}
