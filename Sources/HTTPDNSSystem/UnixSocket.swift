import CHTTPDNSShims
import Glibc

/// The kernel's credentials of a Unix socket peer, captured at connect time (SO_PEERCRED).
public struct PeerCredentials: Sendable, Hashable {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32
}

/// AF_UNIX stream sockets: listening, connecting, accepting.
public enum UnixSocket {
    /// sun_path holds 108 bytes including the terminating NUL.
    public static let maxPathLength = 107

    /// Calls `body` with the `sockaddr_un` for `path` and its length; a path that is empty, holds
    /// a NUL or does not fit `sun_path` is ENAMETOOLONG.
    public static func withAddress<R>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) throws(SystemError) -> R {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPathLength, !bytes.contains(0) else {
            throw SystemError(errno: .fileNameTooLong, call: "socket path \(path)")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    static func makeSocket(nonBlocking: Bool) throws(SystemError) -> FileDescriptor {
        var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return FileDescriptor(rawValue: try syscall("socket") { Glibc.socket(AF_UNIX, type, 0) })
    }

    /// Connects to `path` (a blocking socket unless `nonBlocking`).
    public static func connect(path: String, nonBlocking: Bool = false) throws(SystemError) -> FileDescriptor {
        let fd = try makeSocket(nonBlocking: nonBlocking)
        do {
            let result = try withAddress(path) { address, length in
                Result { () throws(SystemError) in
                    try syscall("connect") { Glibc.connect(fd.rawValue, address, length) }
                }
            }
            _ = try result.get()
        } catch {
            fd.close()
            throw error
        }
        return fd
    }

    /// Whether something accepts connections at `path` right now.
    public static func isLive(path: String) -> Bool {
        guard let fd = try? connect(path: path) else { return false }
        fd.close()
        return true
    }

    /// Binds and listens on `path`. A stale socket file (nobody listening) is removed first;
    /// a live one is never stolen: that fails with EADDRINUSE.
    public static func listen(path: String, backlog: Int32 = 4096, mode: mode_t = 0o666) throws(SystemError)
        -> FileDescriptor
    {
        var status = stat()
        if lstat(path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFSOCK else {
                throw SystemError(errno: .fileExists, call: "bind \(path)")
            }
            if isLive(path: path) { throw SystemError(errno: .addressInUse, call: "bind \(path)") }
            unlink(path)
        }
        let fd = try makeSocket(nonBlocking: true)
        do {
            // The mode is set through umask around bind so the socket never exists with wider access.
            // The umask is the whole process's: a child spawned meanwhile by another thread inherits
            // it (the daemon binds before it starts any thread; tests give what they link 0755).
            let previous = umask(~mode & 0o777)
            let bound = try withAddress(path) { address, length in
                Result { () throws(SystemError) in
                    try syscall("bind \(path)") { Glibc.bind(fd.rawValue, address, length) }
                }
            }
            umask(previous)
            _ = try bound.get()
            _ = try syscall("listen") { Glibc.listen(fd.rawValue, backlog) }
        } catch {
            fd.close()
            throw error
        }
        return fd
    }

    /// Accepts one connection as a non-blocking, close-on-exec descriptor.
    public static func accept(_ listener: FileDescriptor) throws(SystemError) -> IOResult<FileDescriptor> {
        switch try nonBlockingSyscall("accept4", { chttpdns_accept_nonblocking(listener.rawValue) }) {
        case .done(let fd): return .done(FileDescriptor(rawValue: fd))
        case .wouldBlock: return .wouldBlock
        }
    }

    /// The peer of a connected socket, as the kernel recorded it at connect time (SO_PEERCRED).
    public static func peerCredentials(_ fd: FileDescriptor) throws(SystemError) -> PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        _ = try syscall("getsockopt SO_PEERCRED") { chttpdns_peer_credentials(fd.rawValue, &pid, &uid, &gid) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }
}
