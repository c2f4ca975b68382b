import ArgumentParser
import Foundation
import ImageKit

struct Transform: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode IN, apply transformers in the order given, and write OUT (format from OUT's extension).",
        discussion: """
            Steps (each may repeat; they run left to right as one pipeline):
              --resize WxH[:fit|fill|exact]   Lanczos-3 resize (default fit)
              --crop X,Y,W,H                  crop, clamped to the image
              --rotate DEG[:fit]              counter-clockwise; ':fit' grows the canvas to hold it all
              --flip h|v|hv                   mirror horizontally, vertically or both
              --round-corner R[:BORDER_W:#RRGGBBAA]
              --blur SIGMA                    Gaussian (three box passes), sigma in pixels
              --tint #RRGGBBAA                colour over the image, source-atop
              --grayscale                     ITU-R 601 luma, alpha kept
            Other options:
              --print-key                     print the pipeline's transformer key
              --quality Q                     lossy quality 0...1 for JPEG and WebP output (default 0.9)
            """
    )

    @Argument(help: "Input image.") var input: String
    @Argument(help: "Output file (.jpg .png .webp .gif .avif .jxl .heic).") var output: String
    @Argument(parsing: .captureForPassthrough, help: "Steps and options, see below.") var steps: [String] = []

    struct Plan {
        var transformers: [any ImageTransforming] = []
        var printKey = false
        var quality = 0.9
    }

    static func parse(_ arguments: [String]) throws -> Plan {
        var plan = Plan()
        var iterator = arguments.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let value = iterator.next() else { throw ValidationError("\(flag) needs a value") }
            return value
        }
        while let argument = iterator.next() {
            switch argument {
            case "--resize":
                let text = try value(argument)
                let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
                guard let size = Thumbnail.parseSize(parts[0]) else {
                    throw ValidationError("--resize takes WxH[:fit|fill|exact], got '\(text)'")
                }
                let modes: [String: ImageScaleMode] = ["fit": .fit, "fill": .fill, "exact": .exact]
                guard let mode = parts.count == 1 ? .fit : modes[parts[1]] else {
                    throw ValidationError("--resize mode is fit, fill or exact, got '\(parts[1])'")
                }
                plan.transformers.append(ImageResizingTransformer(size: size, mode: mode))
            case "--crop":
                let text = try value(argument)
                let numbers = text.split(separator: ",").compactMap { Int($0) }
                guard numbers.count == 4, numbers[2] > 0, numbers[3] > 0 else {
                    throw ValidationError("--crop takes X,Y,W,H, got '\(text)'")
                }
                plan.transformers.append(
                    ImageCroppingTransformer(
                        rect: PixelRect(x: numbers[0], y: numbers[1], width: numbers[2], height: numbers[3])))
            case "--rotate":
                let text = try value(argument)
                let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
                guard let degrees = Double(parts[0]), degrees.isFinite, parts.count == 1 || parts[1] == "fit" else {
                    throw ValidationError("--rotate takes DEG[:fit], got '\(text)'")
                }
                plan.transformers.append(ImageRotationTransformer(degrees: degrees, fitSize: parts.count == 2))
            case "--flip":
                let text = try value(argument)
                guard ["h", "v", "hv", "vh"].contains(text) else {
                    throw ValidationError("--flip takes h, v or hv, got '\(text)'")
                }
                plan.transformers.append(
                    ImageFlippingTransformer(horizontal: text.contains("h"), vertical: text.contains("v")))
            case "--round-corner":
                let text = try value(argument)
                let parts = text.split(separator: ":").map(String.init)
                guard let radius = Double(parts[0]), radius >= 0, parts.count == 1 || parts.count == 3 else {
                    throw ValidationError("--round-corner takes R[:BORDER_W:#RRGGBBAA], got '\(text)'")
                }
                var borderWidth = 0.0
                var borderColor: RGBAColor?
                if parts.count == 3 {
                    guard let width = Double(parts[1]), width >= 0, let color = RGBAColor(hex: parts[2]) else {
                        throw ValidationError(
                            "--round-corner border is BORDER_W:#RRGGBBAA, got '\(parts[1]):\(parts[2])'")
                    }
                    borderWidth = width
                    borderColor = color
                }
                plan.transformers.append(
                    ImageRoundCornerTransformer(radius: radius, borderWidth: borderWidth, borderColor: borderColor))
            case "--blur":
                let text = try value(argument)
                guard let sigma = Double(text), sigma >= 0, sigma.isFinite else {
                    throw ValidationError("--blur takes a sigma ≥ 0, got '\(text)'")
                }
                plan.transformers.append(ImageBlurTransformer(sigma: sigma))
            case "--tint":
                let text = try value(argument)
                guard let color = RGBAColor(hex: text) else {
                    throw ValidationError("--tint takes #RRGGBB or #RRGGBBAA, got '\(text)'")
                }
                plan.transformers.append(ImageTintTransformer(color: color))
            case "--grayscale":
                plan.transformers.append(ImageGrayscaleTransformer())
            case "--print-key":
                plan.printKey = true
            case "--quality":
                let text = try value(argument)
                guard let quality = Double(text), (0...1).contains(quality) else {
                    throw ValidationError("--quality takes 0...1, got '\(text)'")
                }
                plan.quality = quality
            default:
                throw ValidationError("unknown step '\(argument)'; see imagekit transform --help")
            }
        }
        return plan
    }

    func run() throws {
        let plan = try Self.parse(steps)
        let pipeline = ImagePipelineTransformer(plan.transformers)
        if plan.printKey { print(pipeline.transformerKey) }
        let format = try outputFormat(for: output)
        let data = try readFile(input)
        do {
            let image = try ImageCodersManager.shared.decode(data)
            guard let transformed = try pipeline.transform(image) else {
                throw ImageError(.internalError, "the pipeline returned no image")
            }
            let encoded = try ImageCodersManager.shared.encode(
                transformed, as: format, options: .init(quality: plan.quality))
            try encoded.write(to: URL(fileURLWithPath: output), options: .atomic)
            print(
                "\(output): \(transformed.width)x\(transformed.height), \(transformed.frames.count) frame(s), \(encoded.count) bytes"
            )
        } catch let error as ImageError {
            FileHandle.standardError.write(Data("imagekit: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
