import Foundation
import XCTest

/// The shared conformance corpus (`../shared/corpus` beside the checkout) and its manifest.
enum Corpus {
    struct Entry {
        var path: String
        var format: String
        var width: Int?
        var height: Int?
        var frames: Int?
        var isValid: Bool
        var features: String
        var referenceSHA256: String?

        var url: URL { Corpus.root.appendingPathComponent(path) }
        var data: Data { get throws { try Data(contentsOf: url) } }
    }

    /// `IMAGEKIT_CORPUS` when set, else `../shared/corpus` relative to the package root.
    static let root = sharedFolder("corpus", environment: "IMAGEKIT_CORPUS")

    /// The folder `environment` names when set, else `../shared/<name>` beside the checkout.
    static func sharedFolder(_ name: String, environment: String) -> URL {
        if let override = ProcessInfo.processInfo.environment[environment] {
            return URL(fileURLWithPath: override)
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/\(name)")
    }

    static let entries: [Entry] = {
        guard let text = try? String(contentsOf: root.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 10 else { return nil }
            return Entry(
                path: fields[0], format: fields[1], width: Int(fields[2]), height: Int(fields[3]),
                frames: Int(fields[4]), isValid: fields[5] == "yes", features: fields[6],
                referenceSHA256: fields[9].isEmpty ? nil : fields[9])
        }
    }()

    /// Fails the calling test (rather than passing vacuously) when the corpus is missing.
    static func requireEntries(file: StaticString = #filePath, line: UInt = #line) throws -> [Entry] {
        guard entries.count > 800 else { throw Missing(message: "corpus manifest not found or short at \(root.path)") }
        return entries
    }

    static func entry(_ path: String) -> Entry? { entries.first { $0.path == path } }

    /// A corpus that is not where the tests look: thrown, so the test fails (XCTest records a
    /// thrown error as a failure) instead of passing vacuously or being skipped.
    struct Missing: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func data(_ path: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(path))
    }
}
