import Glibc

/// An error number of the system (errno(3)) as a value: what a failed call left in `errno`, or
/// what a library returned as a negative code.
///
/// Its text is the C library's own (`strerror_r(3)`), so it reads as `strerror` and `%m` would
/// print it. The codes this package tells apart have Swift names; the C name of each is an alias
/// that points to the Swift one (`Errno.EMFILE` becomes `Errno.tooManyOpenFiles`).
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The C value (`ENOENT` is 2 on Linux).
    public let rawValue: Int32

    @inlinable
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno`, right after the call that failed.
    @inlinable
    public static var current: Errno { Errno(rawValue: Glibc.errno) }

    /// The system's message for this error ("No such file or directory"; "Unknown error 9999" for
    /// a number it does not know). `strerror` itself may share one buffer between threads;
    /// `strerror_r` writes into ours.
    public var description: String {
        // glibc's longest message is under 64 bytes.
        var buffer = [CChar](repeating: 0, count: 256)
        _ = strerror_r(rawValue, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

// MARK: the codes this package tells apart

extension Errno {
    /// `EPERM`: the operation needs privileges the caller lacks.
    @inlinable public static var notPermitted: Errno { Errno(rawValue: Glibc.EPERM) }
    /// `ENOENT`: no such file or directory.
    @inlinable public static var noSuchFileOrDirectory: Errno { Errno(rawValue: Glibc.ENOENT) }
    /// `EINTR`: a signal interrupted the call; the syscall helper retries it.
    @inlinable public static var interrupted: Errno { Errno(rawValue: Glibc.EINTR) }
    /// `EIO`: an input/output error.
    @inlinable public static var ioError: Errno { Errno(rawValue: Glibc.EIO) }
    /// `EBADF`: not an open descriptor (a bug in this program, never an I/O failure).
    @inlinable public static var badFileDescriptor: Errno { Errno(rawValue: Glibc.EBADF) }
    /// `EAGAIN`: nothing to do now on a non-blocking descriptor.
    @inlinable public static var resourceTemporarilyUnavailable: Errno { Errno(rawValue: Glibc.EAGAIN) }
    /// `EWOULDBLOCK`: the same as `EAGAIN` on Linux, named for sockets.
    @inlinable public static var wouldBlock: Errno { Errno(rawValue: Glibc.EWOULDBLOCK) }
    /// `ENOMEM`: the kernel could not allocate memory.
    @inlinable public static var noMemory: Errno { Errno(rawValue: Glibc.ENOMEM) }
    /// `EACCES`: permission denied.
    @inlinable public static var permissionDenied: Errno { Errno(rawValue: Glibc.EACCES) }
    /// `EFAULT`: a bad address was passed (a bug in this program).
    @inlinable public static var badAddress: Errno { Errno(rawValue: Glibc.EFAULT) }
    /// `EEXIST`: the file exists.
    @inlinable public static var fileExists: Errno { Errno(rawValue: Glibc.EEXIST) }
    /// `ENOTDIR`: a path component is not a directory.
    @inlinable public static var notDirectory: Errno { Errno(rawValue: Glibc.ENOTDIR) }
    /// `EINVAL`: an invalid argument.
    @inlinable public static var invalidArgument: Errno { Errno(rawValue: Glibc.EINVAL) }
    /// `ENFILE`: the system-wide limit of open files is reached.
    @inlinable public static var tooManyOpenFilesInSystem: Errno { Errno(rawValue: Glibc.ENFILE) }
    /// `EMFILE`: this process's limit of open descriptors is reached.
    @inlinable public static var tooManyOpenFiles: Errno { Errno(rawValue: Glibc.EMFILE) }
    /// `EFBIG`: the file is too large.
    @inlinable public static var fileTooLarge: Errno { Errno(rawValue: Glibc.EFBIG) }
    /// `ENOSPC`: no space left on the device.
    @inlinable public static var noSpace: Errno { Errno(rawValue: Glibc.ENOSPC) }
    /// `EROFS`: a read-only file system.
    @inlinable public static var readOnlyFileSystem: Errno { Errno(rawValue: Glibc.EROFS) }
    /// `EPIPE`: the reading end is closed.
    @inlinable public static var brokenPipe: Errno { Errno(rawValue: Glibc.EPIPE) }
    /// `ENAMETOOLONG`: a path (or a socket path past `sun_path`) is too long.
    @inlinable public static var fileNameTooLong: Errno { Errno(rawValue: Glibc.ENAMETOOLONG) }
    /// `ENOTSOCK`: the descriptor is not a socket.
    @inlinable public static var notSocket: Errno { Errno(rawValue: Glibc.ENOTSOCK) }
    /// `EADDRINUSE`: something already listens at the address.
    @inlinable public static var addressInUse: Errno { Errno(rawValue: Glibc.EADDRINUSE) }
    /// `ECONNABORTED`: a connection was aborted before it was accepted.
    @inlinable public static var connectionAbort: Errno { Errno(rawValue: Glibc.ECONNABORTED) }
    /// `ECONNRESET`: the peer reset the connection.
    @inlinable public static var connectionReset: Errno { Errno(rawValue: Glibc.ECONNRESET) }
    /// `ENOBUFS`: no buffer space available.
    @inlinable public static var noBufferSpace: Errno { Errno(rawValue: Glibc.ENOBUFS) }
    /// `ETIMEDOUT`: the operation timed out.
    @inlinable public static var timedOut: Errno { Errno(rawValue: Glibc.ETIMEDOUT) }
    /// `ECONNREFUSED`: nothing listens there.
    @inlinable public static var connectionRefused: Errno { Errno(rawValue: Glibc.ECONNREFUSED) }
}

// MARK: the C names, pointing to the Swift ones

extension Errno {
    @available(*, unavailable, renamed: "notPermitted")
    public static var EPERM: Errno { .notPermitted }
    @available(*, unavailable, renamed: "noSuchFileOrDirectory")
    public static var ENOENT: Errno { .noSuchFileOrDirectory }
    @available(*, unavailable, renamed: "interrupted")
    public static var EINTR: Errno { .interrupted }
    @available(*, unavailable, renamed: "ioError")
    public static var EIO: Errno { .ioError }
    @available(*, unavailable, renamed: "badFileDescriptor")
    public static var EBADF: Errno { .badFileDescriptor }
    @available(*, unavailable, renamed: "resourceTemporarilyUnavailable")
    public static var EAGAIN: Errno { .resourceTemporarilyUnavailable }
    @available(*, unavailable, renamed: "wouldBlock")
    public static var EWOULDBLOCK: Errno { .wouldBlock }
    @available(*, unavailable, renamed: "noMemory")
    public static var ENOMEM: Errno { .noMemory }
    @available(*, unavailable, renamed: "permissionDenied")
    public static var EACCES: Errno { .permissionDenied }
    @available(*, unavailable, renamed: "badAddress")
    public static var EFAULT: Errno { .badAddress }
    @available(*, unavailable, renamed: "fileExists")
    public static var EEXIST: Errno { .fileExists }
    @available(*, unavailable, renamed: "notDirectory")
    public static var ENOTDIR: Errno { .notDirectory }
    @available(*, unavailable, renamed: "invalidArgument")
    public static var EINVAL: Errno { .invalidArgument }
    @available(*, unavailable, renamed: "tooManyOpenFilesInSystem")
    public static var ENFILE: Errno { .tooManyOpenFilesInSystem }
    @available(*, unavailable, renamed: "tooManyOpenFiles")
    public static var EMFILE: Errno { .tooManyOpenFiles }
    @available(*, unavailable, renamed: "fileTooLarge")
    public static var EFBIG: Errno { .fileTooLarge }
    @available(*, unavailable, renamed: "noSpace")
    public static var ENOSPC: Errno { .noSpace }
    @available(*, unavailable, renamed: "readOnlyFileSystem")
    public static var EROFS: Errno { .readOnlyFileSystem }
    @available(*, unavailable, renamed: "brokenPipe")
    public static var EPIPE: Errno { .brokenPipe }
    @available(*, unavailable, renamed: "fileNameTooLong")
    public static var ENAMETOOLONG: Errno { .fileNameTooLong }
    @available(*, unavailable, renamed: "notSocket")
    public static var ENOTSOCK: Errno { .notSocket }
    @available(*, unavailable, renamed: "addressInUse")
    public static var EADDRINUSE: Errno { .addressInUse }
    @available(*, unavailable, renamed: "connectionAbort")
    public static var ECONNABORTED: Errno { .connectionAbort }
    @available(*, unavailable, renamed: "connectionReset")
    public static var ECONNRESET: Errno { .connectionReset }
    @available(*, unavailable, renamed: "noBufferSpace")
    public static var ENOBUFS: Errno { .noBufferSpace }
    @available(*, unavailable, renamed: "timedOut")
    public static var ETIMEDOUT: Errno { .timedOut }
    @available(*, unavailable, renamed: "connectionRefused")
    public static var ECONNREFUSED: Errno { .connectionRefused }
}
