import ArgumentParser
import Foundation
import ImageKit

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode files and print what they hold.",
        discussion: """
            Prints format (jpeg, png, gif, webp, heic, heif, avif, jxl, tiff, bmp, ico), size, frame \
            count, loop count, frame durations, EXIF orientation, the embedded ICC profile's \
            description and decoded cost for each file. Pixels are converted to sRGB from an \
            embedded profile unless --keep-color-profile is given. With --pixels, also the SHA-256 \
            of each frame's pixels as tightly packed RGBA8 with fully transparent pixels cleared to \
            0,0,0,0. Exits 1 when any file fails to decode.
            """
    )

    @Argument(help: "Image files.") var files: [String]
    @Flag(help: "Print one JSON object per file per line.") var json = false
    @Flag(help: "Also print the SHA-256 of each frame's pixels.") var pixels = false
    @Flag(help: "Do not apply the EXIF orientation to the pixels.") var keepOrientation = false
    @Flag(help: "Keep the pixels in the embedded ICC profile's colour space instead of converting them to sRGB.")
    var keepColorProfile = false
    @Option(help: "Decode scaled to fit inside N×N pixels and report that size.") var maxPixelSize: Int?

    func run() throws {
        var failed = false
        var options = ImageDecodingOptions(appliesOrientation: !keepOrientation)
        options.keepsColorProfile = keepColorProfile
        if let maxPixelSize { options.thumbnailPixelSize = PixelSize(max(1, maxPixelSize)) }
        for path in files {
            do {
                let data = try readFile(path)
                let image = try ImageCodersManager.shared.decode(data, options: options)
                report(path: path, image: image)
            } catch let error as ImageError {
                failed = true
                reportFailure(path: path, code: error.code.rawValue, message: error.message)
            } catch {
                failed = true
                reportFailure(path: path, code: "readFailed", message: "\(error)")
            }
        }
        if failed { throw ExitCode(1) }
    }

    private func report(path: String, image: DecodedImage) {
        let digests = pixels ? image.frames.map { $0.bitmap.canonicalSHA256() } : []
        if json {
            var object: [String: Any] = [
                "path": path, "format": image.format.rawValue, "width": image.width, "height": image.height,
                "frames": image.frames.count, "loopCount": image.loopCount,
                "durations": image.frames.map(\.duration), "orientation": image.orientation.rawValue,
                "cost": image.cost,
                "iccProfile": image.sourceColorProfile.map { $0.description as Any } ?? NSNull(),
            ]
            if pixels { object["sha256"] = digests }
            printJSON(object)
        } else {
            var line = "\(path): \(image.format) \(image.width)x\(image.height), \(image.frames.count) frame(s)"
            if image.isAnimated {
                let durations = image.frames.map { String(format: "%.3g", $0.duration) }.joined(separator: ",")
                line += ", loop \(image.loopCount == 0 ? "forever" : String(image.loopCount)), durations [\(durations)] s"
            }
            line += ", orientation \(image.orientation.rawValue)"
            if let profile = image.sourceColorProfile {
                line += ", ICC \"\(profile.description)\"\(image.colorProfile == nil && !profile.isSRGB ? " (converted to sRGB)" : "")"
            }
            line += ", cost \(image.cost) bytes"
            print(line)
            for (index, digest) in digests.enumerated() { print("  frame \(index) sha256 \(digest)") }
        }
    }

    private func reportFailure(path: String, code: String, message: String) {
        if json {
            printJSON(["path": path, "error": code, "message": message])
        } else {
            print("\(path): error \(code): \(message)")
        }
    }
}
