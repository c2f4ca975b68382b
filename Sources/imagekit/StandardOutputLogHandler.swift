#if Serve
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImageKit
import Logging

/// Log lines on standard output, rendered when a line is written.
///
/// - `text`: swift-log's `StreamLogHandler` layout (`time level label: key=value … [source]
///   message`). `StreamLogHandler` renders its metadata again each time a key is set
///   (Hummingbird sets one on every request, logged or not) and asks for the time zone on each
///   line; this one renders the metadata with the line and formats the time once a second.
/// - `json`: one object per line: `time`, `level`, `label`, `message` and the metadata's keys.
///
/// A line is written whole with `write(2)`, as `fputs` would: a failed write (a full or
/// non-blocking output) loses the line, where `FileHandle.write(_:)` would trap.
struct StandardOutputLogHandler: LogHandler {
    enum Format {
        case text
        case json
    }

    let label: String
    let format: Format
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    /// Lines written so far; the lock keeps a line's `write(2)` calls together. (A `Locked(())`
    /// did the same, but ThreadSanitizer reports the zero-sized value's accesses as a race.)
    private static let output = Locked(0)
    private static let clock = Locked<(second: Int, text: String)>((-1, ""))

    init(label: String, format: Format) {
        self.label = label
        self.format = format
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let explicit = event.metadata { merged.merge(explicit, uniquingKeysWith: { $1 }) }
        if let error = event.error { merged["error"] = "\(error)" }
        let (level, message, source) = (event.level, event.message, event.source)
        let bytes: [UInt8]
        switch format {
        case .text:
            var text = Self.timestamp() + " \(level) \(label):"
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) { text += " \(key)=\(value)" }
            text += " [\(source)] \(message)\n"
            bytes = Array(text.utf8)
        case .json:
            var object: [String: Any] = [
                "time": Date().formatted(.iso8601), "level": level.rawValue, "label": label,
                "message": message.description,
            ]
            for (key, value) in merged { object[key] = Self.json(value) }
            guard
                let line = try? JSONSerialization.data(
                    withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            else { return }
            bytes = Array(line) + [UInt8(ascii: "\n")]
        }
        Self.output.withLock { lines in
            Self.write(bytes)
            lines &+= 1
        }
    }

    /// The local time as `StreamLogHandler` writes it (`%Y-%m-%dT%H:%M:%S%z`), made once a second.
    static func timestamp() -> String {
        let now = time(nil)
        return clock.withLock { clock in
            if clock.second == now { return clock.text }
            var seconds = now
            var parts = tm()
            localtime_r(&seconds, &parts)
            var buffer = [CChar](repeating: 0, count: 64)
            let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
            let text = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            clock = (now, text)
            return text
        }
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let string): return Int(string) ?? Double(string).map { $0 as Any } ?? string
        case .stringConvertible(let convertible): return Int(convertible.description) ?? convertible.description
        case .array(let array): return array.map(json)
        case .dictionary(let dictionary): return dictionary.mapValues(json)
        }
    }

    private static func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
#endif
