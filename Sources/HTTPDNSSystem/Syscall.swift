import Glibc

/// An errno value with the call that produced it.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let errno: Int32
    /// The failing call, e.g. "connect".
    public let call: String

    public init(errno: Int32, call: String) {
        self.errno = errno
        self.call = call
    }

    public var description: String { "\(call): \(SystemError.describe(errno))" }

    /// strerror text for an errno (`strerror` is not thread-safe; `strerror_r`'s GNU form is not imported).
    public static func describe(_ code: Int32) -> String {
        switch code {
        case ENOENT: return "No such file or directory"
        case EACCES: return "Permission denied"
        case EPERM: return "Operation not permitted"
        case ECONNREFUSED: return "Connection refused"
        case EADDRINUSE: return "Address already in use"
        case ENAMETOOLONG: return "File name too long"
        case ENOTSOCK: return "Socket operation on non-socket"
        case EPIPE: return "Broken pipe"
        case ECONNRESET: return "Connection reset by peer"
        case ETIMEDOUT: return "Connection timed out"
        case EAGAIN: return "Resource temporarily unavailable"
        case EMFILE: return "Too many open files"
        case ENOSPC: return "No space left on device"
        case EINVAL: return "Invalid argument"
        case ENOTDIR: return "Not a directory"
        case EROFS: return "Read-only file system"
        default: return "errno \(code)"
        }
    }
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
        let code = errno
        if code == EINTR { continue }
        precondition(code != EBADF && code != EFAULT, "\(name) failed with \(SystemError.describe(code)): a bug")
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
        let code = errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
        precondition(code != EBADF && code != EFAULT, "\(name) failed with \(SystemError.describe(code)): a bug")
        throw SystemError(errno: code, call: name)
    }
}
