import ArgumentParser
import Foundation
import ImageKit

struct Thumbnail: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode IN scaled down at decode time and write it to OUT (format from OUT's extension).",
        discussion:
            "Fits inside N×N with --size N (aspect ratio kept, never upscaled), or stretches to exactly WxH with --exact WxH."
    )

    @Argument(help: "Input image.") var input: String
    @Argument(help: "Output file (.jpg .png .webp .gif .avif .jxl .heic).") var output: String
    @Option(help: "Fit inside N×N pixels.") var size: Int?
    @Option(help: "Exactly WxH pixels (aspect ratio not kept; each side at most the source's).") var exact: String?
    @Option(help: "Lossy quality 0...1 for JPEG and WebP output.") var quality: Double = 0.9

    func validate() throws {
        guard (size == nil) != (exact == nil) else { throw ValidationError("give either --size N or --exact WxH") }
        if let size, size <= 0 { throw ValidationError("--size must be positive") }
        if let exact, Self.parseSize(exact) == nil { throw ValidationError("--exact takes WxH, for example 320x200") }
    }

    static func parseSize(_ text: String) -> PixelSize? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        return PixelSize(width: width, height: height)
    }

    func run() throws {
        let format = try outputFormat(for: output)
        let data = try readFile(input)
        var options = ImageDecodingOptions()
        if let size {
            options.thumbnailPixelSize = PixelSize(size)
        } else if let exact, let box = Self.parseSize(exact) {
            options.thumbnailPixelSize = box
            options.preservesAspectRatio = false
        }
        do {
            let image = try ImageCodersManager.shared.decode(data, options: options)
            let encoded = try ImageCodersManager.shared.encode(image, as: format, options: .init(quality: quality))
            try encoded.write(to: URL(fileURLWithPath: output), options: .atomic)
            print("\(output): \(image.width)x\(image.height), \(encoded.count) bytes")
        } catch let error as ImageError {
            FileHandle.standardError.write(Data("imagekit: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
