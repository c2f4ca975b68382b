import ArgumentParser
import Foundation
import ImageKit

struct Cache: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect or maintain an ImageKit disk cache.",
        subcommands: [Stats.self, Clear.self, Sweep.self]
    )

    struct Location: ParsableArguments {
        @Option(help: "The cache directory (the one holding v1/).") var dir: String
        @Option(help: "Maximum age in seconds before an entry expires (negative: never).") var maxAge: Double =
            7 * 24 * 3600
        @Option(help: "Size limit in bytes for a sweep (0: unlimited).") var maxSize: Int = 0
        @Flag(help: "Age entries by last access instead of by modification.") var accessDate = false

        func open() throws -> DiskCache {
            let configuration = DiskCacheConfiguration(
                maxAge: maxAge, maxSize: maxSize,
                expiryDate: accessDate ? .accessDate : .modificationDate,
                sweepsAtOpen: false)
            return try DiskCache(directory: URL(fileURLWithPath: dir), configuration: configuration)
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count, total size, oldest and newest entry, expired count.")
        @OptionGroup var location: Location
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let statistics = try location.open().statistics()
            let iso = ISO8601DateFormatter()
            if json {
                var object: [String: Any] = [
                    "count": statistics.count, "totalSize": statistics.totalSize,
                    "expired": statistics.expiredCount,
                ]
                if let oldest = statistics.oldest { object["oldest"] = iso.string(from: oldest) }
                if let newest = statistics.newest { object["newest"] = iso.string(from: newest) }
                printJSON(object)
            } else {
                print("entries: \(statistics.count)")
                print("total size: \(statistics.totalSize) bytes")
                print("oldest: \(statistics.oldest.map(iso.string(from:)) ?? "-")")
                print("newest: \(statistics.newest.map(iso.string(from:)) ?? "-")")
                print("expired: \(statistics.expiredCount)")
            }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove every entry.")
        @OptionGroup var location: Location

        func run() throws {
            let cache = try location.open()
            let before = cache.statistics().count
            cache.removeAll()
            print("removed \(before) entries")
        }
    }

    struct Sweep: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove expired entries, then the oldest until under half of --max-size.")
        @OptionGroup var location: Location

        func run() throws {
            let report = try location.open().removeExpired()
            if report.skipped {
                print("another process is sweeping this cache; nothing done")
                return
            }
            print(
                "removed \(report.removedExpired) expired and \(report.removedForSize) for size; "
                    + "\(report.remainingCount) entries, \(report.remainingSize) bytes remain "
                    + String(format: "(%.3f s)", report.duration))
        }
    }
}
