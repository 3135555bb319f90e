import CHTTPDNSShims
import Glibc

/// Loopback TCP listening sockets, for fakes of network peers in tests.
public enum TCPSocket {
    /// Listens on 127.0.0.1 on a port the kernel picks; the socket is non-blocking and close-on-exec.
    public static func listenLoopback(backlog: Int32 = 128) throws(SystemError) -> (fd: FileDescriptor, port: UInt16) {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = FileDescriptor(rawValue: try syscall("socket") { Glibc.socket(AF_INET, type, 0) })
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        do {
            let bound = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    Result { () throws(SystemError) in
                        try syscall("bind 127.0.0.1") { Glibc.bind(fd.rawValue, raw, length) }
                    }
                }
            }
            _ = try bound.get()
            _ = try syscall("listen") { Glibc.listen(fd.rawValue, backlog) }
            let named = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    Result { () throws(SystemError) in
                        try syscall("getsockname") { Glibc.getsockname(fd.rawValue, raw, &length) }
                    }
                }
            }
            _ = try named.get()
        } catch {
            fd.close()
            throw error
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Accepts one connection as a non-blocking, close-on-exec descriptor.
    public static func accept(_ listener: FileDescriptor) throws(SystemError) -> IOResult<FileDescriptor> {
        switch try nonBlockingSyscall("accept4", { chttpdns_accept_nonblocking(listener.rawValue) }) {
        case .done(let fd): return .done(FileDescriptor(rawValue: fd))
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Waits up to `timeoutMs` for `fd` to become readable (or hung up); false on timeout.
    /// Lets a thread that blocks on a socket still notice a stop request in bounded time.
    public static func waitReadable(_ fd: FileDescriptor, timeoutMs: Int32) throws(SystemError) -> Bool {
        var entry = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        let ready = try syscall("poll") { Glibc.poll(&entry, 1, timeoutMs) }
        return ready > 0
    }
}
