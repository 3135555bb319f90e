import Glibc

/// A failed call: its errno and which call it was.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let errno: Errno
    /// The failing call, e.g. "connect".
    public let call: String

    public init(errno: Errno, call: String) {
        self.errno = errno
        self.call = call
    }

    /// "connect: No such file or directory".
    public var description: String { "\(call): \(errno)" }
}

/// The outcome of a non-blocking call that may have to wait.
public enum IOResult<T> {
    case done(T)
    case wouldBlock
}

/// Runs a raw syscall: retries EINTR, and throws an error naming the call.
///
/// EBADF and EFAULT are bugs in this program, not I/O failures, so they trap
/// (swift-nio's `isUnacceptableErrno` habit).
@inline(__always)
public func syscall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Errno.current
        if code == .interrupted { continue }
        precondition(code != .badFileDescriptor && code != .badAddress, "\(name) failed with \(code): a bug")
        throw SystemError(errno: code, call: name)
    }
}

/// Like `syscall`, but EAGAIN/EWOULDBLOCK come back as `.wouldBlock`.
@inline(__always)
public func nonBlockingSyscall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> IOResult<T>
{
    while true {
        let result = body()
        if result != -1 { return .done(result) }
        let code = Errno.current
        if code == .interrupted { continue }
        if code == .resourceTemporarilyUnavailable || code == .wouldBlock { return .wouldBlock }
        precondition(code != .badFileDescriptor && code != .badAddress, "\(name) failed with \(code): a bug")
        throw SystemError(errno: code, call: name)
    }
}
