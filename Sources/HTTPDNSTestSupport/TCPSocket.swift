import Glibc
import HTTPDNSSystem

/// Loopback TCP sockets for fakes of network peers (upstreams, Redis): the daemon itself only
/// ever listens on a Unix socket.
public enum TCPSocket {
    /// Listens on 127.0.0.1 on a port the kernel picks; the socket is non-blocking and close-on-exec.
    public static func listenLoopback(backlog: Int32 = 128) throws(SystemError) -> (fd: FileDescriptor, port: UInt16) {
        try listenLoopback(address: "127.0.0.1", port: 0, backlog: backlog)
    }

    /// Listens on `address` (an IPv4 address in 127.0.0.0/8) and `port` (0: the kernel picks), so
    /// fakes of one service's several addresses can share a port.
    public static func listenLoopback(address: String, port: UInt16, backlog: Int32 = 128) throws(SystemError) -> (
        fd: FileDescriptor, port: UInt16
    ) {
        let (fd, port) = try bindLoopback(address: address, port: port)
        do {
            _ = try syscall("listen") { Glibc.listen(fd.rawValue, backlog) }
        } catch {
            fd.close()
            throw error
        }
        return (fd, port)
    }

    /// Binds a socket to 127.0.0.1 on a port the kernel picks, without listening: while it is
    /// open, the port is this socket's, and a connection to it is refused. (A port found free
    /// and then released could be taken by anything before the connect.)
    public static func bindLoopback() throws(SystemError) -> (fd: FileDescriptor, port: UInt16) {
        try bindLoopback(address: "127.0.0.1", port: 0)
    }

    /// `bindLoopback()` on `address` (in 127.0.0.0/8) and `port` (0: the kernel picks).
    public static func bindLoopback(address text: String, port: UInt16) throws(SystemError) -> (
        fd: FileDescriptor, port: UInt16
    ) {
        var host = in_addr()
        guard inet_pton(AF_INET, text, &host) == 1, UInt32(bigEndian: host.s_addr) >> 24 == 127 else {
            throw SystemError(errno: .invalidArgument, call: "bind \(text)")
        }
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = FileDescriptor(rawValue: try syscall("socket") { Glibc.socket(AF_INET, type, 0) })
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = host
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        do {
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    Result { () throws(SystemError) in
                        _ = try syscall("bind \(text)") { Glibc.bind(fd.rawValue, raw, length) }
                        _ = try syscall("getsockname") { Glibc.getsockname(fd.rawValue, raw, &length) }
                    }
                }
            }
            try bound.get()
        } catch {
            fd.close()
            throw error
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Accepts one connection as a non-blocking, close-on-exec descriptor (accept4(2) is the same
    /// call for every stream socket, so the daemon's Unix-socket accept serves).
    public static func accept(_ listener: FileDescriptor) throws(SystemError) -> IOResult<FileDescriptor> {
        try UnixSocket.accept(listener)
    }
}
