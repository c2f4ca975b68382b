import Foundation

/// How much memory the process may use: the cgroup v2 limit when one is set (containers),
/// otherwise physical memory. `ProcessInfo.physicalMemory` alone reports the host's RAM inside a
/// container.
public enum MemoryLimits {
    /// The share of available memory the default memory cache may fill: 15 %, Nuke's choice
    /// (Kingfisher uses 25 %); a server process has other work for the rest.
    public static let defaultCacheFraction = 0.15

    /// ``defaultCacheFraction`` of `availableMemory()`.
    public static var defaultCacheCostLimit: Int {
        Int(Double(availableMemory()) * defaultCacheFraction)
    }

    /// The memory available to this process in bytes.
    public static func availableMemory(
        procSelfCgroup: String = "/proc/self/cgroup",
        cgroupRoot: String = "/sys/fs/cgroup",
        physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory
    ) -> UInt64 {
        let physical = max(physicalMemory, 1)
        guard let membership = try? String(contentsOfFile: procSelfCgroup, encoding: .utf8),
            let path = cgroupV2Path(membership)
        else { return physical }
        var limit = physical
        // The tightest `memory.max` from this cgroup up to the root applies.
        var components = path.split(separator: "/").map(String.init)
        while true {
            let directory = ([cgroupRoot] + components).joined(separator: "/")
            if let text = try? String(contentsOfFile: directory + "/memory.max", encoding: .utf8),
                let value = parseMemoryMax(text)
            {
                limit = min(limit, value)
            }
            if components.isEmpty { break }
            components.removeLast()
        }
        return limit
    }

    /// The unified-hierarchy path from `/proc/self/cgroup` (the `0::/path` line), if any.
    public static func cgroupV2Path(_ procSelfCgroup: String) -> String? {
        for line in procSelfCgroup.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// A `memory.max` value in bytes; nil for `max` (no limit) or unparseable text.
    public static func parseMemoryMax(_ text: String) -> UInt64? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed != "max" else { return nil }
        return UInt64(trimmed)
    }
}
