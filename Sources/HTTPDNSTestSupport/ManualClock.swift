import Glibc
import HTTPDNSSystem

/// A clock that moves only when the test says so: timers (deadlines, pauses) fire on `advance`,
/// without sleeping, and wall time moves with monotonic time (a test may also step it alone, as
/// NTP would). Used from the one thread that runs the loop (@unchecked Sendable: the log rate
/// limiter, which takes a Sendable clock, reads it from that thread too in tests).
public final class ManualClock: DaemonClock, @unchecked Sendable {
    private var nanoseconds: Int64
    private var wallMs: Int64

    /// Wall time starts at 2026-01-01T00:00:00Z unless given.
    public init(startingAt nanoseconds: Int64 = 1_000_000_000, wallMilliseconds: Int64 = 1_767_225_600_000) {
        self.nanoseconds = nanoseconds
        self.wallMs = wallMilliseconds
    }

    public func nowNanoseconds() -> Int64 { nanoseconds }

    public func wallMilliseconds() -> Int64 { wallMs }

    /// Moves both clocks on.
    public func advance(milliseconds: Int64) {
        nanoseconds += milliseconds * 1_000_000
        wallMs += milliseconds
    }

    /// Steps the wall clock alone (monotonic time does not jump).
    public func stepWall(milliseconds: Int64) { wallMs += milliseconds }
}

/// Two connected stream sockets (AF_UNIX socketpair), both ends close-on-exec.
public func socketPair() throws(SystemError) -> (FileDescriptor, FileDescriptor) {
    var fds: [Int32] = [-1, -1]
    _ = try syscall("socketpair") {
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
    }
    return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
}
