import CHTTPDNSShims
import Glibc
import HTTPDNSCollections
import Synchronization

/// Something that owns a descriptor registered with the loop.
public protocol EventHandler: AnyObject {
    /// Called on the loop thread with the epoll event bits that fired.
    func handleEvents(_ events: UInt32)
}

/// Epoll readiness bits, named.
public enum EpollEvents {
    public static let readable = UInt32(EPOLLIN.rawValue)
    public static let writable = UInt32(EPOLLOUT.rawValue)
    public static let hangUp = UInt32(EPOLLHUP.rawValue)
    public static let error = UInt32(EPOLLERR.rawValue)
}

/// One thread's event loop over a raw epoll set, with timers and a thread-safe way for other
/// threads to hand results back (an eventfd).
///
/// Measured on this project's machines: a raw epoll loop runs at about the speed of a C epoll
/// server, where sd-event with one source per connection and Dispatch ran at ~0.45x. Everything
/// registered with the loop is owned by the loop's thread: no locks on the hot path.
///
/// A turn: wait for descriptors (not at all when work was deferred to this turn), handle them,
/// fire due timers, run the work deferred to this turn, run the `runBeforeNextWait` bodies, then
/// the turn-end handlers (a server flushes the output of the turn there, once per connection).
public final class EventLoop {
    public typealias TimerID = UInt64

    /// The loop's clock; timers and `now` follow it.
    public let clock: any DaemonClock
    /// The time at the start of the current turn (one clock read per turn, for per-event stamps).
    public private(set) var now: Int64
    /// Descriptors that were ready at the start of the current turn: with one, nothing else
    /// waits, and a handler may answer at once instead of with the turn's other answers.
    public private(set) var readyThisTurn = 0

    private let epoll: FileDescriptor
    /// Indexed by descriptor (the kernel hands out the lowest free one, so this stays as long as
    /// the most descriptors open at once): no hashing per event.
    private var handlerObjects: [(any EventHandler)?] = []
    private var timers = BinaryHeap<TimerEntry>()
    private var timerCallbacks: [TimerID: () -> Void] = [:]
    private var nextTimerID: TimerID = 1
    /// The first timer of the heap when it was last found live (0: none; ids start at 1).
    private var liveFirstTimer: TimerID = 0
    private var running = false
    private var beforeWait: [() -> Void] = []
    private var runningBeforeWait: [() -> Void] = []
    private var nextTurn: [() -> Void] = []
    private var turnEndHandlers: [() -> Void] = []
    private let events: UnsafeMutablePointer<epoll_event>
    private static let eventCapacity = 256

    private let wakeFD: FileDescriptor
    private let inbox: Inbox
    private var pendingCompletions: [UInt64: (any Sendable) -> Void] = [:]
    private var nextCompletionToken: UInt64 = 1

    public init(clock: any DaemonClock = SystemClock()) throws(SystemError) {
        self.clock = clock
        now = clock.nowNanoseconds()
        epoll = FileDescriptor(rawValue: try syscall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) })
        wakeFD = FileDescriptor(
            rawValue: try syscall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) })
        inbox = Inbox(wakeFD: wakeFD)
        events = .allocate(capacity: Self.eventCapacity)
        try register(wakeFD, events: EpollEvents.readable, handler: WakeHandler(loop: self))
    }

    deinit {
        events.deallocate()
        wakeFD.close()
        epoll.close()
    }

    // MARK: descriptors

    public func register(_ fd: FileDescriptor, events: UInt32, handler: any EventHandler) throws(SystemError) {
        var event = epoll_event(events: events, data: epoll_data_t(fd: fd.rawValue))
        _ = try syscall("epoll_ctl ADD") { epoll_ctl(epoll.rawValue, EPOLL_CTL_ADD, fd.rawValue, &event) }
        let slot = Int(fd.rawValue)
        if slot >= handlerObjects.count {
            handlerObjects += Array(repeating: nil, count: slot + 1 - handlerObjects.count)
        }
        handlerObjects[slot] = handler
    }

    public func modify(_ fd: FileDescriptor, events: UInt32) throws(SystemError) {
        var event = epoll_event(events: events, data: epoll_data_t(fd: fd.rawValue))
        _ = try syscall("epoll_ctl MOD") { epoll_ctl(epoll.rawValue, EPOLL_CTL_MOD, fd.rawValue, &event) }
    }

    /// Removes the descriptor from the set; the caller still owns (and closes) it.
    public func unregister(_ fd: FileDescriptor) {
        _ = epoll_ctl(epoll.rawValue, EPOLL_CTL_DEL, fd.rawValue, nil)
        let slot = Int(fd.rawValue)
        if slot >= 0 && slot < handlerObjects.count { handlerObjects[slot] = nil }
    }

    // MARK: timers

    /// Runs `callback` on the loop after `milliseconds` of the loop's clock.
    @discardableResult
    public func schedule(afterMilliseconds milliseconds: Int64, _ callback: @escaping () -> Void) -> TimerID {
        let id = nextTimerID
        nextTimerID += 1
        timers.push(TimerEntry(deadline: clock.nowNanoseconds() + milliseconds * 1_000_000, id: id))
        timerCallbacks[id] = callback
        return id
    }

    public func cancel(_ timer: TimerID) {
        guard timerCallbacks.removeValue(forKey: timer) != nil else { return }
        if timer == liveFirstTimer { liveFirstTimer = 0 }
        // Cancelled timers stay in the heap until they come first; once they outnumber the
        // live ones they all go at once (amortized O(1) a cancel), so a timer re-armed again
        // and again holds no more memory than one.
        if timers.count > 2 * timerCallbacks.count + Self.cancelledTimersKept {
            timers.removeAll { timerCallbacks[$0.id] == nil }
        }
    }

    /// Cancelled timers the heap may hold beyond as many as are live.
    static let cancelledTimersKept = 64

    /// Entries in the timer heap, cancelled ones not yet dropped included (for tests).
    public var testsOnly_timerHeapCount: Int { timers.count }

    /// Runs `body` once every event and timer of the current turn is handled, before the loop
    /// waits again (to batch work that many events of one turn produced).
    public func runBeforeNextWait(_ body: @escaping () -> Void) {
        beforeWait.append(body)
    }

    /// Runs `body` in the next turn, which then does not wait for descriptors: for work left over
    /// by design (a per-turn budget), which no new event would bring back.
    public func runNextTurn(_ body: @escaping () -> Void) {
        nextTurn.append(body)
    }

    /// Calls `body` at the end of every turn, after the `runBeforeNextWait` bodies.
    public func onTurnEnd(_ body: @escaping () -> Void) {
        turnEndHandlers.append(body)
    }

    // MARK: work from other threads

    /// The handle other threads use to post results back to this loop.
    public var poster: LoopPoster { LoopPoster(inbox: inbox) }

    /// Reserves a token whose result, posted from any thread with `LoopPoster.post`, is handed to
    /// `completion` on the loop thread. The completion itself never leaves this thread.
    public func expectCompletion<T: Sendable>(_ type: T.Type, _ completion: @escaping (T) -> Void) -> UInt64 {
        let token = nextCompletionToken
        nextCompletionToken += 1
        pendingCompletions[token] = { value in
            guard let typed = value as? T else { preconditionFailure("completion posted with the wrong type") }
            completion(typed)
        }
        return token
    }

    /// Completions run in one turn; the rest wait for the next, so threads that finish faster
    /// than the loop runs their completions cannot keep it from its descriptors and timers.
    public static let completionsPerTurn = 64

    fileprivate func drainInbox() {
        var counter: UInt64 = 0
        _ = Glibc.read(wakeFD.rawValue, &counter, 8)
        let (taken, more) = inbox.take(atMost: Self.completionsPerTurn)
        for (token, value) in taken {
            pendingCompletions.removeValue(forKey: token)?(value)
        }
        if more { inbox.wake() }
    }

    // MARK: running

    /// Runs turns until `stop()`.
    public func run() {
        running = true
        while running { runTurn() }
    }

    public func stop() { running = false }

    /// Runs one turn, waiting at most `maxWaitMilliseconds` for descriptors (nil: until the next
    /// timer). Tests drive the loop with it, so they wait for events instead of sleeping.
    public func runTurn(maxWaitMilliseconds: Int32? = nil) {
        // Work deferred to this turn; what it defers in turn waits for the next one.
        let deferred = nextTurn
        nextTurn.removeAll()
        var timeout = deferred.isEmpty ? millisecondsUntilNextTimer() : 0
        if let maxWaitMilliseconds { timeout = timeout < 0 ? maxWaitMilliseconds : min(timeout, maxWaitMilliseconds) }
        let count = epoll_wait(epoll.rawValue, events, Int32(Self.eventCapacity), timeout)
        if count < 0 {
            precondition(Errno.current == .interrupted, "epoll_wait failed: \(Errno.current)")
            return
        }
        now = clock.nowNanoseconds()
        readyThisTurn = Int(count)
        for i in 0..<Int(count) {
            let event = events[i]
            // A handler may close other descriptors during this batch: look each one up afresh.
            let slot = Int(event.data.fd)
            if slot < handlerObjects.count, let handler = handlerObjects[slot] {
                handler.handleEvents(event.events)
            }
        }
        fireDueTimers()
        for body in deferred { body() }
        repeat {
            while !beforeWait.isEmpty {
                // Swapped with a spare, both keeping their storage: no allocation per turn.
                swap(&beforeWait, &runningBeforeWait)
                for body in runningBeforeWait { body() }
                runningBeforeWait.removeAll(keepingCapacity: true)
            }
            for handler in turnEndHandlers { handler() }
        } while !beforeWait.isEmpty
    }

    private func millisecondsUntilNextTimer() -> Int32 {
        // Cancelled timers stay in the heap until they come first; the first one, once found
        // live, is not looked up again each turn.
        while let first = timers.first, first.id != liveFirstTimer {
            if timerCallbacks[first.id] != nil {
                liveFirstTimer = first.id
            } else {
                timers.popFirst()
            }
        }
        guard let first = timers.first else { return -1 }
        let remaining = first.deadline - clock.nowNanoseconds()
        if remaining <= 0 { return 0 }
        return Int32(min((remaining + 999_999) / 1_000_000, Int64(Int32.max)))
    }

    private func fireDueTimers() {
        let now = clock.nowNanoseconds()
        while let first = timers.first, first.deadline <= now {
            timers.popFirst()
            if let callback = timerCallbacks.removeValue(forKey: first.id) { callback() }
        }
    }
}

@available(*, unavailable)
extension EventLoop: Sendable {}

private final class WakeHandler: EventHandler {
    unowned let loop: EventLoop
    init(loop: EventLoop) { self.loop = loop }
    func handleEvents(_ events: UInt32) { loop.drainInbox() }
}

/// Results posted by other threads, waiting for the loop.
final class Inbox: Sendable {
    private let items = Mutex<[(UInt64, any Sendable)]>([])
    private let wakeFD: FileDescriptor

    init(wakeFD: FileDescriptor) { self.wakeFD = wakeFD }

    func post(token: UInt64, value: any Sendable) {
        let wasEmpty = items.withLock { items in
            items.append((token, value))
            return items.count == 1
        }
        if wasEmpty { wake() }
    }

    /// The oldest `limit` items, and whether more are left.
    func take(atMost limit: Int) -> (items: [(UInt64, any Sendable)], more: Bool) {
        items.withLock { items in
            guard items.count > limit else {
                let taken = items
                items.removeAll(keepingCapacity: true)
                return (taken, false)
            }
            let taken = Array(items.prefix(limit))
            items.removeFirst(limit)
            return (taken, true)
        }
    }

    /// Makes the loop look again (items were left for its next turn).
    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD.rawValue, &one, 8)
    }
}

/// Hands a value to a completion reserved with `EventLoop.expectCompletion`, from any thread.
public struct LoopPoster: Sendable {
    let inbox: Inbox
    public func post(token: UInt64, value: any Sendable) { inbox.post(token: token, value: value) }
}

/// A timer in the loop's heap: earliest deadline first, and among equal deadlines the one
/// scheduled first (ids only grow).
struct TimerEntry: Comparable {
    var deadline: Int64
    var id: UInt64

    static func < (lhs: TimerEntry, rhs: TimerEntry) -> Bool {
        lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.id < rhs.id
    }
}
