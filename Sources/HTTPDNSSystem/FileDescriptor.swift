import CHTTPDNSShims
import Glibc

private let sysClose = Glibc.close
private let sysRead = Glibc.read
private let sysSend = Glibc.send
private let sysWrite = Glibc.write

/// A raw file descriptor. Its lifetime is explicit: whoever opened it calls `close()`.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Closes the descriptor. EINTR is ignored: on Linux the fd is released anyway, and
    /// retrying could close a descriptor another thread just opened (LWN "close() and EINTR").
    public func close() {
        _ = sysClose(rawValue)
    }

    /// Runs `body`, then closes the descriptor whatever happens.
    public func closeAfter<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        defer { close() }
        return try body()
    }

    /// Reads into `buffer`; 0 means end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("read") { sysRead(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Sends on a socket with MSG_NOSIGNAL, so a closed peer is EPIPE and never SIGPIPE.
    public func send(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("send") { sysSend(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Writes to a non-socket (pipes, eventfd, files).
    public func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try nonBlockingSyscall("write") { sysWrite(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `bytes`, for blocking descriptors (log lines, files).
    public func writeAll(_ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in
                    try syscall("write") { sysWrite(rawValue, raw.baseAddress! + offset, raw.count - offset) }
                }
            }
            offset += try result.get()
        }
    }

    public func setNonBlocking(_ on: Bool = true) throws(SystemError) {
        let flags = try syscall("fcntl") { fcntl(rawValue, F_GETFL) }
        let updated = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if updated != flags { _ = try syscall("fcntl") { fcntl(rawValue, F_SETFL, updated) } }
    }

    public func setCloseOnExec() throws(SystemError) {
        let flags = try syscall("fcntl") { fcntl(rawValue, F_GETFD) }
        _ = try syscall("fcntl") { fcntl(rawValue, F_SETFD, flags | FD_CLOEXEC) }
    }

    public static let standardError = FileDescriptor(rawValue: 2)
    /// Standard output, for output written as it comes (`httpdnsctl monitor`).
    public static let standardOutput = FileDescriptor(rawValue: 1)
}
