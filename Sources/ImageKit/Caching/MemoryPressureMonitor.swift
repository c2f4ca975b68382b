import Foundation

/// Watches the memory pressure of the process's cgroup (or of the machine outside a container)
/// and trims the memory caches it watches when pressure rises: on Linux the counterpart of
/// SDWebImage's response to memory warnings.
///
/// Signals, each read once a second from small kernel files:
/// - the cgroup v2 pressure-stall information (`memory.pressure`: `some avg10` ≥ 10 % is a
///   warning, ≥ 40 % or `full avg10` ≥ 10 % critical);
/// - `memory.events`: a new `high`, `max` or `oom` event since the last look is critical;
/// - usage against the limit (`memory.current` / `memory.max`): ≥ 90 % warning, ≥ 95 % critical;
/// - outside a limited cgroup, `/proc/meminfo`: `MemAvailable` < 10 % of `MemTotal` warning,
///   < 5 % critical.
///
/// A warning trims each watched cache to half its cost; critical empties it. Either drops the
/// rebuildable state of lazy animations and their players' kept frames and returns spare pixel
/// memory to the system (``MemoryCache/trim(toCost:)``). Every ``ImageCache`` with a
/// ``MemoryCache`` registers with ``shared`` (``ImageCacheConfiguration/trimsOnMemoryPressure``).
///
/// ```swift
/// let token = MemoryPressureMonitor.shared.addHandler { level in
///     if level == .critical { myBuffers.removeAll() }
/// }
/// ```
public final class MemoryPressureMonitor: Sendable {
    /// How hard the kernel is pressing on the process's memory.
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        /// Memory is available.
        case normal
        /// The process is near its limit: caches should shrink.
        case warning
        /// The process is at its limit: free everything that can be rebuilt.
        case critical
        /// Orders levels from normal to critical.
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
        /// `normal`, `warning` or `critical`.
        public var description: String { ["normal", "warning", "critical"][rawValue] }
    }

    /// What one look at the kernel's files found (nil: not available here).
    public struct Reading: Sendable, Hashable {
        /// Share of the last 10 s in which some task stalled on memory (`some avg10`, percent).
        public var someAverage10: Double?
        /// Share of the last 10 s in which every task stalled on memory (`full avg10`, percent).
        public var fullAverage10: Double?
        /// `high` + `max` + `oom` of `memory.events`.
        public var limitEvents: UInt64?
        /// Bytes the cgroup uses now (`memory.current`).
        public var usage: UInt64?
        /// The cgroup's limit in bytes (`memory.max`).
        public var limit: UInt64?
        /// `MemAvailable` of `/proc/meminfo`, in bytes.
        public var available: UInt64?
        /// `MemTotal` of `/proc/meminfo`, in bytes.
        public var total: UInt64?

        /// A reading with the given values (tests and custom sources build their own).
        public init(
            someAverage10: Double? = nil, fullAverage10: Double? = nil, limitEvents: UInt64? = nil,
            usage: UInt64? = nil,
            limit: UInt64? = nil, available: UInt64? = nil, total: UInt64? = nil
        ) {
            self.someAverage10 = someAverage10
            self.fullAverage10 = fullAverage10
            self.limitEvents = limitEvents
            self.usage = usage
            self.limit = limit
            self.available = available
            self.total = total
        }
    }

    /// The process-wide monitor over the real kernel files.
    public static let shared = MemoryPressureMonitor()

    private let interval: TimeInterval
    private let readFile: @Sendable (String) -> String?
    private let procSelfCgroup: String
    private let cgroupRoot: String
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "ImageKit.MemoryPressureMonitor", qos: .utility)

    private struct State {
        var caches: [WeakCache] = []
        var handlers: [Int: @Sendable (Level) -> Void] = [:]
        var nextHandler = 0
        var lastEvents: UInt64?
        var lastLevel = Level.normal
        var lastNotified: Double = -.infinity
        var timer: DispatchSourceTimer?
    }

    private struct WeakCache {
        weak var cache: MemoryCache?
    }

    /// A monitor polling every `interval` seconds once something registers. `readFile` reads a
    /// kernel file (tests give it synthetic contents); the paths are those of cgroup v2.
    public init(
        interval: TimeInterval = 1, procSelfCgroup: String = "/proc/self/cgroup", cgroupRoot: String = "/sys/fs/cgroup",
        readFile: @escaping @Sendable (String) -> String? = { try? String(contentsOfFile: $0, encoding: .utf8) }
    ) {
        self.interval = interval
        self.procSelfCgroup = procSelfCgroup
        self.cgroupRoot = cgroupRoot
        self.readFile = readFile
    }

    deinit {
        state.withLock { $0.timer?.cancel() }
    }

    /// Trims `cache` under pressure from now on (held weakly).
    public func watch(_ cache: MemoryCache) {
        state.withLock { state in
            state.caches.removeAll { $0.cache == nil }
            state.caches.append(WeakCache(cache: cache))
        }
        startTimerIfNeeded()
    }

    /// Calls `handler` (on the monitor's queue) when pressure is found; returns an id for
    /// ``removeHandler(_:)``.
    @discardableResult
    public func addHandler(_ handler: @escaping @Sendable (Level) -> Void) -> Int {
        let id = state.withLock { state -> Int in
            state.nextHandler += 1
            state.handlers[state.nextHandler] = handler
            return state.nextHandler
        }
        startTimerIfNeeded()
        return id
    }

    /// Stops calling the handler `addHandler(_)` returned `id` for.
    public func removeHandler(_ id: Int) { state.withLock { _ = $0.handlers.removeValue(forKey: id) } }

    private func startTimerIfNeeded() {
        guard interval > 0 else { return }
        state.withLock { state in
            guard state.timer == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
            timer.setEventHandler { [weak self] in _ = self?.poll() }
            timer.resume()
            state.timer = timer
        }
    }

    /// Looks once: reads the files, classifies, and responds when there is pressure (a rise, or
    /// every 5 s while it lasts). Returns the level found. The timer calls it; tests call it.
    @discardableResult
    public func poll(now: Double = ProcessInfo.processInfo.systemUptime) -> Level {
        let reading = read()
        let (level, respond, caches, handlers) = state.withLock {
            state -> (Level, Bool, [MemoryCache], [@Sendable (Level) -> Void]) in
            let level = Self.level(of: reading, previousEvents: state.lastEvents)
            state.lastEvents = reading.limitEvents ?? state.lastEvents
            let respond = level > .normal && (level > state.lastLevel || now - state.lastNotified >= 5)
            state.lastLevel = level
            if respond { state.lastNotified = now }
            state.caches.removeAll { $0.cache == nil }
            return (level, respond, state.caches.compactMap(\.cache), Array(state.handlers.values))
        }
        guard respond else { return level }
        for cache in caches { cache.trim(toCost: level == .critical ? 0 : cache.totalCost / 2) }
        if caches.isEmpty {
            PixelMemory.releaseSpares()
            TurboJPEGCompressor.releasePooled()
        }
        for handler in handlers { handler(level) }
        return level
    }

    /// The level a reading stands for (see the type's documentation).
    public static func level(of reading: Reading, previousEvents: UInt64?) -> Level {
        var level = Level.normal
        if let events = reading.limitEvents, let previousEvents, events > previousEvents { return .critical }
        if let some = reading.someAverage10 {
            if some >= 40 || (reading.fullAverage10 ?? 0) >= 10 { return .critical }
            if some >= 10 { level = .warning }
        }
        if let usage = reading.usage, let limit = reading.limit, limit > 0 {
            let ratio = Double(usage) / Double(limit)
            if ratio >= 0.95 { return .critical }
            if ratio >= 0.90 { level = .warning }
        } else if let available = reading.available, let total = reading.total, total > 0 {
            let ratio = Double(available) / Double(total)
            if ratio < 0.05 { return .critical }
            if ratio < 0.10 { level = max(level, .warning) }
        }
        return level
    }

    /// Reads the process's cgroup files and `/proc/meminfo`.
    public func read() -> Reading {
        var reading = Reading()
        if let membership = readFile(procSelfCgroup), let path = MemoryLimits.cgroupV2Path(membership) {
            let directory = cgroupRoot + (path == "/" ? "" : path)
            if let pressure = readFile(directory + "/memory.pressure") {
                reading.someAverage10 = Self.average10(pressure, kind: "some")
                reading.fullAverage10 = Self.average10(pressure, kind: "full")
            }
            if let events = readFile(directory + "/memory.events") {
                var total: UInt64 = 0
                for line in events.split(separator: "\n") {
                    let parts = line.split(separator: " ")
                    if parts.count == 2, ["high", "max", "oom"].contains(parts[0]), let value = UInt64(parts[1]) {
                        total += value
                    }
                }
                reading.limitEvents = total
            }
            if let current = readFile(directory + "/memory.current").flatMap({
                UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }),
                let limit = readFile(directory + "/memory.max").flatMap(MemoryLimits.parseMemoryMax)
            {
                reading.usage = current
                reading.limit = limit
            }
        }
        if reading.limit == nil, let meminfo = readFile("/proc/meminfo") {
            for line in meminfo.split(separator: "\n") {
                let parts = line.split(separator: " ", omittingEmptySubsequences: true)
                guard parts.count >= 2, let kilobytes = UInt64(parts[1]) else { continue }
                if parts[0] == "MemAvailable:" { reading.available = kilobytes * 1024 }
                if parts[0] == "MemTotal:" { reading.total = kilobytes * 1024 }
            }
        }
        return reading
    }

    /// `avg10` of the `some` or `full` line of a PSI file.
    static func average10(_ text: String, kind: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(kind + " ") {
            for field in line.split(separator: " ") where field.hasPrefix("avg10=") {
                return Double(field.dropFirst(6))
            }
        }
        return nil
    }
}
