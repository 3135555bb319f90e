import Glibc
import HTTPDNSSystem

/// A loop clock that moves only when the test says so: timers (deadlines, pauses) fire on
/// `advance`, without sleeping. Used from the one thread that runs the loop.
public final class ManualLoopClock: LoopClock {
    private var nanoseconds: Int64

    public init(startingAt nanoseconds: Int64 = 1_000_000_000) { self.nanoseconds = nanoseconds }

    public func nowNanoseconds() -> Int64 { nanoseconds }

    public func advance(milliseconds: Int64) { nanoseconds += milliseconds * 1_000_000 }
}

/// Two connected stream sockets (AF_UNIX socketpair), both ends close-on-exec.
public func socketPair() throws(SystemError) -> (FileDescriptor, FileDescriptor) {
    var fds: [Int32] = [-1, -1]
    _ = try syscall("socketpair") {
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
    }
    return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
}
