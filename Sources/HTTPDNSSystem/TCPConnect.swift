import Glibc

/// Non-blocking outgoing TCP connections, to time how fast a peer accepts (address ranking): the
/// caller waits for the descriptor to become writable on its event loop, then reads the outcome.
public enum TCPConnect {
    /// What starting a connection came to.
    public enum Start {
        /// The kernel finished it at once (possible on loopback).
        case connected(FileDescriptor)
        /// In progress: wait for the descriptor to be writable, then call `outcome`.
        case inProgress(FileDescriptor)
        /// It failed at once (refused, unreachable, no route): no descriptor is left open.
        case failed(Errno)
    }

    /// Starts a connection to `address` (4 or 16 network-order bytes) and `port` on a new
    /// non-blocking, close-on-exec socket. Errors of the socket itself (out of descriptors)
    /// are thrown; the connection's own come back as `.failed`.
    public static func start(address: [UInt8], port: UInt16) throws(SystemError) -> Start {
        let ipv6 = address.count == 16
        precondition(ipv6 || address.count == 4, "an address is 4 or 16 bytes")
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = FileDescriptor(rawValue: try syscall("socket") { Glibc.socket(ipv6 ? AF_INET6 : AF_INET, type, 0) })
        let result: Int32
        if ipv6 {
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { $0.copyBytes(from: address) }
            result = connectErrno(fd, to: &socketAddress)
        } else {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &socketAddress.sin_addr) { $0.copyBytes(from: address) }
            result = connectErrno(fd, to: &socketAddress)
        }
        if result == 0 { return .connected(fd) }
        let code = Errno(rawValue: result)
        if code == Errno(rawValue: EINPROGRESS) { return .inProgress(fd) }
        fd.close()
        return .failed(code)
    }

    /// The outcome of a connection `start` left in progress, once its descriptor is writable:
    /// nil when it is open, else why it failed (SO_ERROR).
    public static func outcome(_ fd: FileDescriptor) -> Errno? {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd.rawValue, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return Errno.current }
        return code == 0 ? nil : Errno(rawValue: code)
    }

    /// connect(2) to a `sockaddr_in` or `sockaddr_in6`: 0, or the errno. An interrupted connect
    /// goes on in the background (connect(2), EINTR): it is in progress, not to be started again.
    private static func connectErrno<Address>(_ fd: FileDescriptor, to address: inout Address) -> Int32 {
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd.rawValue, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
        guard connected != 0 else { return 0 }
        let code = Errno.current
        return code == .interrupted ? EINPROGRESS : code.rawValue
    }
}
