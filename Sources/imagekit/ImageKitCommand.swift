import ArgumentParser
import Foundation
import ImageKit

@main
struct ImageKitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imagekit",
        abstract: "Inspect, decode and convert images with ImageKit.",
        version: ImageKit.versionDescription,
        subcommands: subcommands
    )

    #if Serve
    static let subcommands: [any ParsableCommand.Type] = [
        Info.self, Convert.self, Thumbnail.self, Transform.self, Cache.self,
        Download.self, Fetch.self, Prefetch.self, Frames.self, Compare.self, Serve.self,
    ]
    #else
    static let subcommands: [any ParsableCommand.Type] = [
        Info.self, Convert.self, Thumbnail.self, Transform.self, Cache.self,
        Download.self, Fetch.self, Prefetch.self, Frames.self, Compare.self,
    ]
    #endif

    /// The command line, with `IMAGEKIT_SERVE_*` variables added as options for `serve`.
    static var arguments: [String] {
        var arguments = Array(CommandLine.arguments.dropFirst())
        #if Serve
        if arguments.first == "serve" {
            arguments =
                ["serve"]
                + Serve.arguments(Array(arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        }
        #endif
        return arguments
    }

    /// As ArgumentParser's, except that bad arguments exit with status 2 (the Unix convention
    /// the tool documents) rather than 64.
    static func main() {
        var usageMessage: String
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
            return
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            usageMessage = fullMessage(for: error)
        }
        // Outside the catch: the error is released before the process ends (LeakSanitizer
        // reports an error still held at exit).
        FileHandle.standardError.write(Data((usageMessage + "\n").utf8))
        Foundation.exit(2)
    }
}

/// The image format `path`'s extension names, or a usage error.
func outputFormat(for path: String) throws -> ImageFormat {
    let pathExtension = URL(fileURLWithPath: path).pathExtension
    guard let format = ImageFormat(fileExtension: pathExtension), format.isCodecSupported else {
        throw ValidationError(
            "cannot tell an output format from '.\(pathExtension)' (use .jpg, .png, .webp, .gif, .avif, .jxl or .heic)")
    }
    return format
}

/// Reads a whole file, as a typed error on failure. `mapped`: the file is mapped rather than
/// read (its pages are read in as they are used and can be dropped again; the file must not
/// shrink while the command runs).
func readFile(_ path: String, mapped: Bool = false) throws -> Data {
    do {
        return try Data(contentsOf: URL(fileURLWithPath: path), options: mapped ? .alwaysMapped : [])
    } catch {
        throw ValidationError("cannot read \(path): \(error.localizedDescription)")
    }
}

/// Writes one line of JSON to standard output.
func printJSON(_ object: [String: Any]) {
    guard
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    else { return }
    print(String(decoding: data, as: UTF8.self))
    fflush(nil)  // a line per result as it comes, also into a pipe (nil: every output stream)
}
