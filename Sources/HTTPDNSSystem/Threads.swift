import CHTTPDNSShims
import Glibc

/// Starts a POSIX thread running `body`. A joinable thread must be joined (pthread_join) by
/// its owner; a detached one cleans up after itself. `name` (up to 15 bytes) is what `top -H`,
/// `ps -L`, perf and gdb show for it.
@discardableResult
public func spawnThread(
    named name: String? = nil, joinable: Bool = false, _ body: @escaping @Sendable () -> Void
) -> pthread_t {
    final class Box: Sendable {
        let name: String?
        let body: @Sendable () -> Void
        init(_ name: String?, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let context = Unmanaged.passRetained(Box(name, body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            if let name = box.name { chttpdns_name_this_thread(name) }
            box.body()
            return nil
        }, context)
    precondition(rc == 0, "pthread_create failed: \(Errno(rawValue: rc))")
    if !joinable { pthread_detach(thread) }
    return thread
}

/// A mutex with one condition variable, heap-allocated so their addresses never move.
public final class ConditionLock: @unchecked Sendable {
    // @unchecked: pthread objects are thread-safe by definition; the pointers never change.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits for a signal; the lock must be held.
    public func wait() { pthread_cond_wait(condition, mutex) }
    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }

    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
