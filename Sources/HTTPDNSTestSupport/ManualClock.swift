import Glibc
import HTTPDNSSystem
import Synchronization

/// A clock that moves only when the test says so: timers (deadlines, pauses) fire on `advance`,
/// without sleeping, and wall time moves with monotonic time (a test may also step it alone, as
/// NTP would). Moved by the test's thread; readable from any (a worker may read it).
public final class ManualClock: DaemonClock, Sendable {
    private let nanoseconds: Atomic<Int64>
    private let wallMs: Atomic<Int64>

    /// Wall time starts at 2026-01-01T00:00:00Z unless given.
    public init(startingAt nanoseconds: Int64 = 1_000_000_000, wallMilliseconds: Int64 = 1_767_225_600_000) {
        self.nanoseconds = Atomic(nanoseconds)
        self.wallMs = Atomic(wallMilliseconds)
    }

    public func nowNanoseconds() -> Int64 { nanoseconds.load(ordering: .relaxed) }

    public func wallMilliseconds() -> Int64 { wallMs.load(ordering: .relaxed) }

    /// Moves both clocks on.
    public func advance(milliseconds: Int64) {
        nanoseconds.add(milliseconds * 1_000_000, ordering: .relaxed)
        wallMs.add(milliseconds, ordering: .relaxed)
    }

    /// Steps the wall clock alone (monotonic time does not jump).
    public func stepWall(milliseconds: Int64) { wallMs.add(milliseconds, ordering: .relaxed) }
}

/// Two connected stream sockets (AF_UNIX socketpair), both ends close-on-exec.
public func socketPair() throws(SystemError) -> (FileDescriptor, FileDescriptor) {
    var fds: [Int32] = [-1, -1]
    _ = try syscall("socketpair") {
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
    }
    return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
}
