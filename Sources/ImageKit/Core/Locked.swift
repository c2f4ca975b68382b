#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a pthread mutex.
///
/// ImageKit uses this instead of `Synchronization.Mutex`: on Linux, Mutex's contended path
/// (a futex wait inside the prebuilt standard library) is invisible to ThreadSanitizer, which
/// then reports every contended critical section as a race, drowning real ones. pthread mutexes
/// are intercepted by TSan and cost the same uncontended.
package final class Locked<Value>: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `value` is only touched inside `withLock`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Never call back into user code, a C
    /// decode or an `await` from inside.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
