import Foundation
import XCTest

/// The reference implementations on PyPI (blurhash, thumbhash-python, ssimulacra2), run with the
/// Python of the reference venv `make test` prepares (`IMAGEKIT_REFERENCE_PYTHON`).
enum ReferencePython {
    /// The lines `Tests/placeholders/SCRIPT` prints for `arguments`; fails the test when the
    /// venv is not set up or the script exits non-zero.
    static func lines(of script: String, _ arguments: [String]) throws -> [Substring] {
        let python = try XCTUnwrap(
            ProcessInfo.processInfo.environment["IMAGEKIT_REFERENCE_PYTHON"],
            "IMAGEKIT_REFERENCE_PYTHON is not set: run the tests with `make test`, which prepares the reference venv")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("placeholders")
        process.arguments = [folder.appendingPathComponent(script).path] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, script)
        return lines
    }
}
