import HTTPDNSSystem

/// Hands a stream of values from one background thread to the event loop, one at a time: the
/// thread's `send` waits until the loop has taken the previous value (the loop re-arms the
/// mailbox with a fresh completion token when it is ready for the next), so a fast producer
/// can never flood the loop.
final class LoopMailbox<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `token` and `closed` are only touched under `lock`.
    private let lock = ConditionLock()
    private let poster: LoopPoster
    private var token: UInt64?
    private var closed = false

    init(poster: LoopPoster) {
        self.poster = poster
    }

    /// Loop side: ready for the next value, delivered to the completion reserved as `token`.
    func arm(_ token: UInt64) {
        lock.withLock {
            self.token = token
            lock.broadcast()
        }
    }

    /// Thread side: waits until the loop is ready, then posts `value`; false once closed.
    @discardableResult
    func send(_ value: Value) -> Bool {
        lock.lock()
        while token == nil && !closed { lock.wait() }
        guard !closed, let armed = token else {
            lock.unlock()
            return false
        }
        token = nil
        lock.unlock()
        poster.post(token: armed, value: value)
        return true
    }

    /// Wakes a waiting sender for good (shutdown).
    func close() {
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }

    var isClosed: Bool { lock.withLock { closed } }
}

/// A value one thread waits for and another provides, or cancels.
final class Handoff<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` and `cancelled` are only touched under `lock`.
    private let lock = ConditionLock()
    private var value: Value?
    private var cancelled = false

    func provide(_ newValue: Value) {
        lock.withLock {
            value = newValue
            lock.broadcast()
        }
    }

    func cancel() {
        lock.withLock {
            cancelled = true
            lock.broadcast()
        }
    }

    /// The value, or nil when cancelled first.
    func wait() -> Value? {
        lock.lock()
        defer { lock.unlock() }
        while value == nil && !cancelled { lock.wait() }
        return value
    }
}
