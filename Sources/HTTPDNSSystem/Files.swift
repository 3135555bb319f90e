import Glibc

/// Whole-file reads and directory creation for configuration and state paths.
public enum Files {
    /// Reads a regular file, refusing anything larger than `limit` bytes.
    public static func read(_ path: String, limit: Int = 16 << 20) throws(SystemError) -> [UInt8] {
        let fd = FileDescriptor(rawValue: try syscall("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) })
        defer { fd.close() }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in
                    try syscall("read \(path)") { Glibc.read(fd.rawValue, raw.baseAddress, raw.count) }
                }
            }
            let n = try count.get()
            if n == 0 { return contents }
            contents.append(contentsOf: chunk[0..<n])
            if contents.count > limit { throw SystemError(errno: .fileTooLarge, call: "read \(path)") }
        }
    }

    /// Whether `path` names a Unix socket (stat(2) follows symlinks, as connect(2) does).
    public static func isSocket(_ path: String) -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        return (status.st_mode & S_IFMT) == S_IFSOCK
    }

    public static func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// `mkdir -p` with `mode` for every directory it creates.
    public static func createDirectory(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        var status = stat()
        if stat(path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFDIR else {
                throw SystemError(errno: .notDirectory, call: "mkdir \(path)")
            }
            return
        }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try createDirectory(String(path[..<slash]), mode: mode)
        }
        if mkdir(path, mode) != 0 && Errno.current != .fileExists {
            throw SystemError(errno: .current, call: "mkdir \(path)")
        }
    }

    /// Creates `path` if missing and makes it mode 0600 (never following a symlink); a file that
    /// is not a regular one of the effective uid is refused (EPERM), never taken over.
    public static func createPrivateFile(_ path: String) throws(SystemError) {
        let fd = FileDescriptor(
            rawValue: try syscall("open \(path)") { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) })
        defer { fd.close() }
        var status = stat()
        _ = try syscall("fstat \(path)") { fstat(fd.rawValue, &status) }
        guard (status.st_mode & S_IFMT) == S_IFREG, status.st_uid == geteuid() else {
            throw SystemError(errno: .permissionDenied, call: "open \(path) (owned by uid \(status.st_uid))")
        }
        _ = try syscall("fchmod \(path)") { fchmod(fd.rawValue, 0o600) }
    }

    /// Replaces `path` with `bytes` (mode 0600) so that a crash at any point leaves either the old
    /// file or the new one, whole: the bytes go to `path.tmp`, are synced, and the temporary file is
    /// renamed over `path`; the directory is synced so the rename lasts.
    public static func replaceAtomically(_ path: String, with bytes: [UInt8]) throws(SystemError) {
        let temporary = path + ".tmp"
        let fd = FileDescriptor(
            rawValue: try syscall("open \(temporary)") {
                open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            })
        do {
            try fd.writeAll(bytes)
            _ = try syscall("fsync \(temporary)") { fsync(fd.rawValue) }
        } catch {
            fd.close()
            unlink(temporary)
            throw error
        }
        fd.close()
        try rename(temporary, to: path)
        let directory = FileDescriptor(
            rawValue: try syscall("open \(parentDirectory(of: path))") {
                open(parentDirectory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            })
        defer { directory.close() }
        _ = try syscall("fsync \(parentDirectory(of: path))") { fsync(directory.rawValue) }
    }

    public static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try syscall("rename \(from)") { Glibc.rename(from, to) }
    }

    /// A new private directory `/tmp/PREFIX-XXXXXX` (mkdtemp(3)).
    public static func makeTemporaryDirectory(prefix: String) throws(SystemError) -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        guard made else { throw SystemError(errno: .current, call: "mkdtemp") }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The directory part of a path ("." when there is none).
    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// The process's environment and identity, read once where needed.
public enum ProcessEnvironment {
    public static func value(_ name: String) -> String? {
        guard let raw = getenv(name) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }

    public static var effectiveUserID: UInt32 { geteuid() }
}

/// Process resource limits.
public enum ResourceLimits {
    /// Raises the soft open-file limit to the hard one. systemd starts services with a soft limit
    /// of 1024 for select()'s sake; an epoll daemon with thousands of clients needs more.
    @discardableResult
    public static func raiseOpenFileLimit() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}

extension Files {
    /// Takes an exclusive `flock(2)` on `path` (created mode 0600 if missing) without waiting:
    /// the descriptor holds the lock until it is closed or the process ends; nil when another
    /// open file description holds it.
    public static func lockExclusively(_ path: String) throws(SystemError) -> FileDescriptor? {
        let fd = FileDescriptor(
            rawValue: try syscall("open \(path)") { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) })
        let outcome: IOResult<Int32>
        do {
            outcome = try nonBlockingSyscall("flock \(path)") { flock(fd.rawValue, LOCK_EX | LOCK_NB) }
        } catch {
            fd.close()
            throw error
        }
        guard case .done = outcome else {
            fd.close()
            return nil
        }
        return fd
    }
}
