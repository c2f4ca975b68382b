import Foundation
import XCTest

/// The conformance corpus and its manifest: the full corpus when it is there
/// (`IMAGEKIT_CORPUS`, or `../shared/corpus` beside the checkout), else the subset kept in the
/// repository (`Tests/Corpus/conformance`, chosen by `scripts/make-test-corpus.py`). The first use
/// prints which one the run uses.
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

    /// Where the corpus is read from, and whether it is the full one.
    struct Location {
        var root: URL
        var isFull: Bool
    }

    static let location = locate(shared: "corpus", subset: "conformance", environment: "IMAGEKIT_CORPUS")
    static var root: URL { location.root }
    /// Whether the run has the full corpus (else the repository's subset).
    static var isFull: Bool { location.isFull }

    /// The folder `environment` names when set, else `../shared/<shared>` beside the checkout
    /// when it holds a manifest, else `Tests/Corpus/<subset>`.
    static func locate(shared: String, subset: String, environment: String) -> Location {
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let subsetRoot = packageRoot.appendingPathComponent("Tests/Corpus/\(subset)")
        let location: Location
        if let override = ProcessInfo.processInfo.environment[environment], !override.isEmpty {
            let root = URL(fileURLWithPath: override)
            location = Location(
                root: root, isFull: root.standardizedFileURL.path != subsetRoot.standardizedFileURL.path)
        } else {
            let beside = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/\(shared)")
            if FileManager.default.fileExists(atPath: beside.appendingPathComponent("MANIFEST.tsv").path) {
                location = Location(root: beside, isFull: true)
            } else {
                location = Location(root: subsetRoot, isFull: false)
            }
        }
        print(
            "ImageKit tests: \(shared) from \(location.root.standardizedFileURL.path)"
                + (location.isFull
                    ? " (full)"
                    : " (the repository's subset; the full corpus runs when \(environment) or ../shared/\(shared) is there)")
        )
        return location
    }

    /// `full` on the full corpus; on the subset, nine tenths of the subset's share of it (the
    /// subset keeps the small files, so a category's share varies): a count that guards against
    /// a suite checking nothing holds on both.
    static func minimum(_ full: Int) -> Int {
        isFull ? full : full * entries.count * 9 / (828 * 10)
    }

    /// Camera-sized JPEG photos (a megapixel or more, valid): the sources of the tests that
    /// re-encode or scale real photos, largest first. The subset keeps three.
    static var photos: [Entry] {
        func pixels(_ entry: Entry) -> Int { (entry.width ?? 0) * (entry.height ?? 0) }
        return entries.filter { $0.format == "JPEG" && $0.isValid && pixels($0) >= 1_000_000 }
            .sorted { pixels($0) > pixels($1) }
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
        guard entries.count > (isFull ? 800 : 400) else {
            throw Missing(message: "corpus manifest not found or short at \(root.path)")
        }
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
