import Foundation

// Spec: VIEW-03/04.
/// The live load of each (target, operation key) pair (SDWebImage's per-view operations
/// dictionary), for every manager.
///
/// Targets cannot be given storage on Linux (no associated objects), so the registry keys them
/// by identity and keeps them weakly. An entry exists only while a load runs: the load's end
/// removes it, and every load ends (the manager guarantees one final event), so targets that
/// come and go leave nothing behind. A registration is current while no newer load for the same
/// pair replaced it; only the current one may touch the target.
final class ImageTargetRegistry: Sendable {
    static let shared = ImageTargetRegistry()

    private struct Registration {
        let id: Int
        var task: ImageLoadTask?
    }

    private struct Entry {
        weak var target: AnyObject?
        var loads: [String: Registration] = [:]
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var sequence = 0
    }

    private let state = Locked(State())

    /// Registers a new load for `target` and `key`; returns its id and the load it replaces,
    /// which the caller cancels (outside the lock).
    func begin(_ target: AnyObject, key: String) -> (id: Int, replaced: ImageLoadTask?) {
        let identifier = ObjectIdentifier(target)
        return state.withLock { state in
            state.sequence += 1
            let id = state.sequence
            var entry = state.entries[identifier] ?? Entry(target: target)
            if entry.target !== target {
                // The address of a deallocated target, reused: its loads are not this one's.
                entry = Entry(target: target)
            }
            let replaced = entry.loads[key]?.task
            entry.loads[key] = Registration(id: id, task: nil)
            state.entries[identifier] = entry
            return (id, replaced)
        }
    }

    /// Records the task of load `id`; false when the load is no longer current (it ended or
    /// was replaced while starting).
    @discardableResult
    func attach(_ task: ImageLoadTask, target: ObjectIdentifier, key: String, id: Int) -> Bool {
        state.withLock { state in
            guard state.entries[target]?.loads[key]?.id == id else { return false }
            state.entries[target]?.loads[key]?.task = task
            return true
        }
    }

    /// Whether load `id` is still the one for its target and key.
    func isCurrent(_ target: ObjectIdentifier, key: String, id: Int) -> Bool {
        state.withLock { $0.entries[target]?.loads[key]?.id == id }
    }

    /// Load `id` ended: it leaves the registry if it is still current, and its target's entry
    /// with its last load.
    func end(_ target: ObjectIdentifier, key: String, id: Int) {
        state.withLock { state in
            guard var entry = state.entries[target], entry.loads[key]?.id == id else { return }
            entry.loads[key] = nil
            state.entries[target] = entry.loads.isEmpty ? nil : entry
        }
    }

    /// Removes the load of `target` and `key` and returns its task to cancel.
    func cancel(_ target: AnyObject, key: String) -> ImageLoadTask? {
        let identifier = ObjectIdentifier(target)
        return state.withLock { state -> ImageLoadTask? in
            guard var entry = state.entries[identifier], entry.target === target,
                let registration = entry.loads.removeValue(forKey: key)
            else { return nil }
            state.entries[identifier] = entry.loads.isEmpty ? nil : entry
            return registration.task
        }
    }

    func isLoading(_ target: AnyObject, key: String) -> Bool {
        state.withLock { state in
            guard let entry = state.entries[ObjectIdentifier(target)], entry.target === target else { return false }
            return entry.loads[key] != nil
        }
    }

    /// Targets with a load registered (tests check that nothing is left behind).
    var entryCount: Int { state.withLock { $0.entries.count } }
}
