import ArgumentParser
import Foundation
import ImageKit

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode files and print what they hold.",
        discussion: """
            Prints format (jpeg, png, gif, webp, heic, heif, avif, jxl, tiff, bmp, ico, svg, pdf), size, frame \
            count, loop count, frame durations, EXIF orientation, the embedded ICC profile's \
            description and decoded cost for each file; a TIFF's (or PDF's) page count; for an HDR source \
            (PQ or HLG) its transfer, as it was tone-mapped to sRGB; whether the file carries an HDR \
            gain map (not applied: its base image is what is decoded); SVG files are marked as vectors. Pixels are converted to sRGB from an \
            embedded profile unless --keep-color-profile is given. With --pixels, also the SHA-256 \
            of each frame's pixels as tightly packed RGBA8 with fully transparent pixels cleared to \
            0,0,0,0. An animation (GIF, APNG, WebP, AVIF, JPEG XL) is reported from its first frame and its \
            headers (frame count, durations, loop count; the cost is what decoding every frame \
            would take), so a long animation is not decoded whole; --pixels decodes every frame. \
            Exits 1 when any file fails to decode.
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
                let data = try readFile(path, mapped: true)
                if !pixels, let facts = try animationFacts(data, options: options) {
                    report(path: path, data: data, image: facts.first, frames: facts.frames)
                    continue
                }
                let image = try ImageCodersManager.shared.decode(data, options: options)
                report(path: path, data: data, image: image)
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

    /// What an animation (GIF, APNG, WebP, AVIF, JPEG XL: any format whose coder plays it frame by
    /// frame) holds without decoding more than its first frame:
    /// that frame (size, orientation, colour profile) and the headers' frame count, durations and
    /// loop count. Nil for a still image and the other formats (decoded whole).
    private func animationFacts(_ data: Data, options: ImageDecodingOptions)
        throws -> (first: DecodedImage, frames: (durations: [Double], loopCount: Int))?
    {
        guard let animation = try? AnimatedImage(data: data, limits: options.limits), animation.frameCount > 1 else {
            return nil
        }
        var first = options
        first.firstFrameOnly = true
        return (try ImageCodersManager.shared.decode(data, options: first), (animation.durations, animation.loopCount))
    }

    /// `frames`: an animation's durations and loop count from its headers, when `image` holds only
    /// its first frame.
    private func report(
        path: String, data: Data, image: DecodedImage, frames: (durations: [Double], loopCount: Int)? = nil
    ) {
        let digests = pixels ? image.frames.map { $0.bitmap.canonicalSHA256() } : []
        let durations = frames?.durations ?? image.frames.map(\.duration)
        let loopCount = frames?.loopCount ?? image.loopCount
        let cost = frames.map { image.cost * $0.durations.count } ?? image.cost
        if json {
            var object: [String: Any] = [
                "path": path, "format": image.format.rawValue, "width": image.width, "height": image.height,
                "frames": durations.count, "loopCount": loopCount,
                "durations": durations, "orientation": image.orientation.rawValue,
                "cost": cost, "vector": image.format == .svg,
                "hdrTransfer": image.hdrTransfer.map { $0.rawValue as Any } ?? NSNull(),
                "toneMapped": image.isToneMapped, "gainMap": image.hasGainMap,
                "pages": pages(data) as Any? ?? NSNull(),
                "iccProfile": image.sourceColorProfile.map { $0.description as Any } ?? NSNull(),
            ]
            if pixels { object["sha256"] = digests }
            printJSON(object)
        } else {
            var line = "\(path): \(image.format) \(image.width)x\(image.height), \(durations.count) frame(s)"
            if image.format == .svg { line += " (vector: its intrinsic size, drawn at any size asked)" }
            if let pages = pages(data) { line += ", \(pages) page(s)" }
            if let transfer = image.hdrTransfer { line += ", HDR \(transfer) tone-mapped to sRGB" }
            if image.hasGainMap { line += ", HDR gain map (not applied: the base image is shown)" }
            if durations.count > 1 {
                let listed = durations.map { String(format: "%.3g", $0) }.joined(separator: ",")
                line += ", loop \(loopCount == 0 ? "forever" : String(loopCount)), durations [\(listed)] s"
            }
            line += ", orientation \(image.orientation.rawValue)"
            if let profile = image.sourceColorProfile {
                line +=
                    ", ICC \"\(profile.description)\"\(image.colorProfile == nil && !profile.isSRGB ? " (converted to sRGB)" : "")"
            }
            line += ", cost \(cost) bytes"
            print(line)
            for (index, digest) in digests.enumerated() { print("  frame \(index) sha256 \(digest)") }
        }
    }

    /// A multi-page document's page count (TIFF, and PDF in builds with the PDF trait); nil for
    /// other formats.
    private func pages(_ data: Data) -> Int? {
        #if PDF
        if ImageFormat.detect(data) == .pdf { return PDFCoder.pageCount(data) }
        #endif
        return TIFFCoder.pageCount(data)
    }

    private func reportFailure(path: String, code: String, message: String) {
        if json {
            printJSON(["path": path, "error": code, "message": message])
        } else {
            print("\(path): error \(code): \(message)")
        }
    }
}
