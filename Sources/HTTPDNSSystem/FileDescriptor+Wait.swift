import Glibc

private let sysPoll = Glibc.poll

/// Readiness a blocking client waits for (poll(2) `POLLIN` / `POLLOUT`).
public enum PollReadiness: Sendable {
    /// `POLLIN`: data to read, end of file, or (on a listener) a connection to accept.
    case readable
    /// `POLLOUT`: room in the send buffer.
    case writable
}

extension FileDescriptor {
    /// Waits up to `timeoutMilliseconds` (negative: forever) for `readiness`.
    ///
    /// Returns false on timeout. Hang-up and error conditions count as ready, so the following
    /// read or send reports what happened. The clients use this instead of `SO_RCVTIMEO`
    /// because a deadline spans several reads.
    public func wait(for readiness: PollReadiness, timeoutMilliseconds: Int32) throws(SystemError) -> Bool {
        let events: Int16 = readiness == .readable ? Int16(POLLIN) : Int16(POLLOUT)
        var entry = pollfd(fd: rawValue, events: events, revents: 0)
        let ready = try syscall("poll") { sysPoll(&entry, 1, timeoutMilliseconds) }
        return ready > 0
    }
}

/// Milliseconds of CLOCK_MONOTONIC, for deadlines that must not jump with the wall clock.
public func monotonicMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// Filesystem queries a client needs (socket discovery).
public enum FileSystemQuery {
    /// Whether `path` names a Unix socket (stat(2) follows symlinks, as connect(2) does).
    public static func isSocket(_ path: String) -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        return (status.st_mode & S_IFMT) == S_IFSOCK
    }

    /// The value of an environment variable, nil when unset.
    public static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
