import CHTTPDNSShims
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
