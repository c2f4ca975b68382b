import ArgumentParser
import Foundation
import ImageKit

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode an image and encode it in the format OUT's extension names.",
        discussion: """
            Output formats: .jpg/.jpeg, .png, .webp, .gif. Animated input (GIF, APNG, animated WebP) stays animated \
            for .gif, .png (APNG) and .webp, with its frame durations and loop count; JPEG keeps the first frame.
            """
    )

    @Argument(help: "Input image.") var input: String
    @Argument(help: "Output file; its extension picks the format.") var output: String
    @Option(help: "Lossy quality, 0...1 (or 1...100), for JPEG and lossy WebP.") var quality: Double = 0.9
    @Flag(help: "Lossless WebP.") var lossless = false

    func validate() throws {
        guard quality >= 0, quality <= 100 else { throw ValidationError("--quality must be within 0...1 or 1...100") }
    }

    func run() throws {
        let format = try outputFormat(for: output)
        let data = try readFile(input)
        do {
            let image = try ImageCodersManager.shared.decode(data)
            let options = ImageEncodingOptions(quality: quality > 1 ? quality / 100 : quality, lossless: lossless)
            let encoded = try ImageCodersManager.shared.encode(image, as: format, options: options)
            try encoded.write(to: URL(fileURLWithPath: output), options: .atomic)
            print("\(output): \(format) \(image.width)x\(image.height), \(format == .jpeg ? 1 : image.frameCount) frame(s), \(encoded.count) bytes")
        } catch let error as ImageError {
            FileHandle.standardError.write(Data("imagekit: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
