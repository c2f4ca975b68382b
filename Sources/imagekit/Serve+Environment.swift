#if Serve
import ArgumentParser

// `IMAGEKIT_SERVE_<NAME>`: every option of `imagekit serve` read from the environment as well.
extension Serve {
    /// Options `IMAGEKIT_SERVE_<NAME>` fills in: (long name, how it takes a value).
    enum Kind { case value, list, flag, switchable }
    static let environmentOptions: [(String, Kind)] = [
        ("host", .value), ("port", .value), ("backlog", .value), ("health-port", .value), ("key", .list),
        ("salt", .list),
        ("thumbor-key", .list), ("allow-unsafe", .flag),
        ("allow-source", .list), ("allow-address", .list), ("s3-bucket", .list), ("s3-endpoint", .value),
        ("s3-region", .value), ("s3-path-style", .switchable), ("local-root", .value), ("admin-key", .value),
        ("purge-notify", .list), ("source-tags", .flag),
        ("cache-dir", .value),
        ("memory-limit", .value),
        ("disk-limit", .value),
        ("max-source-bytes", .value), ("max-pixels", .value), ("timeout", .value), ("max-redirects", .value),
        ("workers", .value),
        ("queue", .value), ("grace", .value), ("max-age", .value), ("result-ttl", .value),
        ("video-thumbnail-second", .value), ("client-hints", .flag), ("best-format", .flag), ("preset", .list),
        ("autoquality", .value), ("autoquality-format-min", .value), ("autoquality-format-max", .value),
        ("autoquality-max-resolution", .value),
        ("auto-webp", .switchable), ("auto-avif", .switchable), ("otel-endpoint", .value), ("log-level", .value),
        ("log-format", .value),
    ]

    /// `arguments` (after `serve`) with an option added for each `IMAGEKIT_SERVE_<NAME>` whose
    /// option is not on the command line.
    static func arguments(_ arguments: [String], environment: [String: String]) -> [String] {
        var result = arguments
        let given = Set(
            arguments.compactMap { argument -> String? in
                guard argument.hasPrefix("--") else { return nil }
                let name = argument.dropFirst(2).split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                return name.hasPrefix("no-") ? String(name.dropFirst(3)) : name
            })
        for (name, kind) in environmentOptions where !given.contains(name) {
            let variable = "IMAGEKIT_SERVE_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
            guard let value = environment[variable]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
                continue
            }
            let isTrue = ["1", "true", "yes", "on"].contains(value.lowercased())
            switch kind {
            case .value: result += ["--" + name, value]
            case .list:
                for item in value.split(separator: ",") {
                    result += ["--" + name, item.trimmingCharacters(in: .whitespaces)]
                }
            case .flag: if isTrue { result.append("--" + name) }
            case .switchable: result.append(isTrue ? "--" + name : "--no-" + name)
            }
        }
        return result
    }
}
#endif
