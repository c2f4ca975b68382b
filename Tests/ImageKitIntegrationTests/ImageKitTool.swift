import Foundation
import XCTest

/// The `imagekit` tool built beside the test bundle, run as a user would.
enum ImageKitTool {
    static var url: URL? {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("imagekit")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }

    /// Runs the tool; returns its exit status and standard output (standard error is dropped).
    static func run(_ arguments: [String]) throws -> (Int32, String) {
        let (status, output, _) = try run(arguments, capturing: .standardOutput)
        return (status, output)
    }

    enum Stream { case standardOutput, standardError }

    /// Runs the tool; returns its exit status, the captured stream and nothing of the other.
    static func run(_ arguments: [String], capturing stream: Stream) throws -> (
        status: Int32, output: String, errors: String
    ) {
        let process = Process()
        process.executableURL = try XCTUnwrap(url, "the imagekit tool is not built beside the tests")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = stream == .standardOutput ? pipe : FileHandle.nullDevice
        process.standardError = stream == .standardError ? pipe : FileHandle.nullDevice
        try process.run()
        let data = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stream == .standardOutput ? data : "", stream == .standardError ? data : "")
    }

    /// One JSON object per output line.
    static func jsonLines(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}
