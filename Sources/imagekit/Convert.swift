import ArgumentParser
import Foundation
import ImageKit

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode an image and encode it in the format OUT's extension names.",
        discussion: """
            Input: every format ImageKit decodes (JPEG, PNG, GIF, WebP, HEIC/HEIF, AVIF, JPEG XL, TIFF, BMP, ICO). \
            Output formats: .jpg/.jpeg, .png, .webp, .gif, .avif, .jxl, .heic. Animated input (GIF, APNG, animated WebP, AVIF and \
            JPEG XL animations) stays animated for .gif, .png (APNG), .webp and .avif (an image sequence), with its \
            frame durations and loop count (AVIF: libavif 0.11 writes none, players loop forever); JPEG, JPEG XL and \
            HEIC keep the first frame. .mp4 (H.264) and .webm (VP9) write the frames as video, each with its own \
            timing (a build with the Video trait). Pixels are converted to sRGB unless --keep-color-profile is \
            given, which keeps them in the embedded profile's space and embeds the profile in the output.
            """
    )

    @Argument(help: "Input image.") var input: String
    @Argument(help: "Output file; its extension picks the format.") var output: String
    @Option(help: "Lossy quality, 0...1 (or 1...100), for JPEG, lossy WebP, AVIF, JPEG XL and HEIC.") var quality:
        Double = 0.9
    @Flag(help: "Lossless WebP, AVIF, JPEG XL or HEIC.") var lossless = false
    @Option(
        help:
            "Encoder speed, 0 (slowest, smallest) ... 10 (fastest): AVIF's libaom speed, JPEG XL's effort 9...1, HEIC's x265 preset."
    ) var speed: Int?
    @Option(
        help:
            "The most bytes the output may take: the highest quality up to --quality that fits (JPEG, WebP, AVIF, JPEG XL, HEIC)."
    )
    var maxFileSize: Int?
    @Option(
        help: ArgumentHelp(
            "Choose the quality per image instead of --quality: ssimulacra2:TARGET, dssim:TARGET or size:BYTES, then optionally :MIN:MAX qualities (1...100) and :ALLOWED_ERROR.",
            valueName: "method:target[:min:max[:error]]"))
    var autoquality: String?
    @Flag(help: "Keep the pixels in the embedded ICC profile's colour space and embed the profile in the output.")
    var keepColorProfile = false

    func validate() throws {
        guard quality >= 0, quality <= 100 else { throw ValidationError("--quality must be within 0...1 or 1...100") }
    }

    func run() throws {
        if let video = VideoWriter.Format(rawValue: URL(fileURLWithPath: output).pathExtension.lowercased()) {
            return try convertToVideo(video)
        }
        let format = try outputFormat(for: output)
        let data = try readFile(input)
        do {
            var decoding = ImageDecodingOptions()
            decoding.keepsColorProfile = keepColorProfile
            let image = try ImageCodersManager.shared.decode(data, options: decoding)
            let options = ImageEncodingOptions(
                quality: quality > 1 ? quality / 100 : quality, lossless: lossless,
                speed: speed, maxFileSize: maxFileSize)
            var chosen = ""
            let encoded: Data
            if let autoquality {
                let result = try ImageCodersManager.shared.encode(
                    image, as: format, options: options, autoQuality: try Self.autoQuality(autoquality))
                encoded = result.data
                chosen =
                    ", quality \(result.quality)" + (result.score.map { String(format: " (score %.2f)", $0) } ?? "")
                    + ", \(result.encodes) encode(s)"
            } else {
                encoded = try ImageCodersManager.shared.encode(image, as: format, options: options)
            }
            try encoded.write(to: URL(fileURLWithPath: output), options: .atomic)
            print(
                "\(output): \(format) \(image.width)x\(image.height), \([.jpeg, .jpegXL, .heic].contains(format) ? 1 : image.frameCount) frame(s), \(encoded.count) bytes\(chosen)"
            )
        } catch let error as ImageError {
            FileHandle.standardError.write(Data("imagekit: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// `method:target[:min:max[:error]]`, as imgproxy's `autoquality` option spells it.
    static func autoQuality(_ text: String) throws -> AutoQuality {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, parts.count <= 5, let target = Double(parts[1]) else {
            throw ValidationError("--autoquality is method:target[:min:max[:error]]")
        }
        let low = parts.count > 2 ? Int(parts[2]) : 10, high = parts.count > 3 ? Int(parts[3]) : 95
        let error = parts.count > 4 ? Double(parts[4]) : nil
        guard let low, let high, low <= high, parts.count < 5 || error != nil else {
            throw ValidationError("--autoquality's min and max are qualities 1...100, min ≤ max")
        }
        switch parts[0] {
        case "size": return AutoQuality(.size(bytes: Int(target)), qualities: low...high)
        case "dssim": return AutoQuality(.dssim(target: target, allowedError: error ?? 0.002), qualities: low...high)
        case "ssimulacra2":
            return AutoQuality(.ssimulacra2(target: target, allowedError: error ?? 2), qualities: low...high)
        default: throw ValidationError("--autoquality's method is ssimulacra2, dssim or size")
        }
    }

    /// An animation (or a still) written as H.264 MP4 or VP9 WebM, one frame decoded at a time.
    private func convertToVideo(_ format: VideoWriter.Format) throws {
        do {
            let image = try ImageCodersManager.shared.decode(
                try readFile(input), options: ImageDecodingOptions(decodesFramesLazily: true))
            let encoded = try VideoWriter.encode(image, as: format, quality: quality > 1 ? quality / 100 : quality)
            try encoded.write(to: URL(fileURLWithPath: output), options: .atomic)
            print(
                "\(output): \(format.rawValue) \(image.width)x\(image.height), \(image.frameCount) frame(s), \(encoded.count) bytes"
            )
        } catch let error as ImageError {
            FileHandle.standardError.write(Data("imagekit: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
