import Glibc

/// A path the daemon would keep login cookies in, or listen on, that another user made or could
/// swap: the daemon refuses it rather than use it as it is.
public struct UntrustedPathError: Error, CustomStringConvertible {
    public let path: String
    /// What is wrong with it ("is owned by uid 3000, not by the daemon's user (uid 0)").
    public let problem: String
    /// What the user can do about it.
    public let fix: String

    public var description: String { "\(path) \(problem); \(fix)" }
}

/// Directories and files checked before use: owner, mode and symbolic links, read with lstat and
/// fstat (never through a link another user could point elsewhere).
public enum TrustedPaths {
    /// Makes `path` (and any missing parent, mode 0755) the daemon's private directory: it must be
    /// owned by the effective uid and writable by nobody else; a looser mode that only lets others
    /// read is tightened to 0700. Every entry already in it must be the daemon's too and no
    /// symbolic link: once the directory is private, nobody else can add one. Symbolic links on
    /// the way are followed only when root owns them (systemd's `StateDirectory=` with
    /// `DynamicUser=yes` is such a link), and every directory above the path they lead to must be
    /// root's or the daemon's and writable by nobody else unless it is sticky (/tmp), so that
    /// nobody can rename it away and put another in its place. The directory is opened without
    /// following a link and checked, tightened and listed through that descriptor, so a swap after
    /// the checks changes nothing it does.
    ///
    /// Returns the directory's path without symbolic links (the store opens its files with
    /// SQLITE_OPEN_NOFOLLOW, which refuses a link anywhere in the path).
    @discardableResult
    public static func preparePrivateDirectory(_ path: String, fix: String) throws(UntrustedPathError) -> String {
        let owner = geteuid()
        try checkLinks(in: path, fix: fix)
        var status = stat()
        if lstat(path, &status) != 0 {
            do {
                try Files.createDirectory(Files.parentDirectory(of: path), mode: 0o755)
                if mkdir(path, 0o700) != 0 && Errno.current != .fileExists {
                    throw SystemError(errno: .current, call: "mkdir")
                }
            } catch {
                throw UntrustedPathError(path: path, problem: "cannot be created (\(error))", fix: fix)
            }
            try checkLinks(in: path, fix: fix)
        }
        guard let resolved = realpath(path, nil) else {
            throw UntrustedPathError(path: path, problem: "cannot be resolved (\(Errno.current))", fix: fix)
        }
        let canonical = String(cString: resolved)
        free(resolved)
        try checkAncestors(of: canonical, fix: fix)
        let fd = open(canonical, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw UntrustedPathError(
                path: path, problem: "cannot be opened as a directory (\(Errno.current))", fix: fix)
        }
        defer { close(fd) }
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw UntrustedPathError(path: path, problem: "is not a directory", fix: fix)
        }
        guard status.st_uid == owner else {
            throw UntrustedPathError(
                path: path, problem: "is owned by uid \(status.st_uid), not by the daemon's user (uid \(owner))",
                fix: fix)
        }
        if status.st_mode & 0o022 != 0 {
            throw UntrustedPathError(
                path: path, problem: "is writable by other users (mode \(octal(status.st_mode & 0o7777)))", fix: fix)
        }
        try checkEntries(of: fd, path: path, owner: owner, fix: fix)
        if status.st_mode & 0o077 != 0 && fchmod(fd, 0o700) != 0 {
            throw UntrustedPathError(path: path, problem: "cannot be made private (\(Errno.current))", fix: fix)
        }
        return canonical
    }

    /// Checks the directory a socket is bound in: owned by root or the daemon's user, and not
    /// writable by others unless sticky (then nobody else can remove or replace what the daemon
    /// binds there); the same rules for symbolic links and directories above it as
    /// `preparePrivateDirectory`.
    public static func checkSocketDirectory(_ path: String, fix: String) throws(UntrustedPathError) {
        try checkLinks(in: path, fix: fix)
        guard let resolved = realpath(path, nil) else {
            throw UntrustedPathError(path: path, problem: "cannot be resolved (\(Errno.current))", fix: fix)
        }
        let canonical = String(cString: resolved)
        free(resolved)
        try checkAncestors(of: canonical + "/.", fix: fix)
    }

    /// Whether an existing socket file at `path` may be replaced by the daemon's own bind: it is
    /// refused when it is not a socket or another user owns it (the daemon never takes over what
    /// someone else put there); nil when nothing is there or it is the daemon's user's.
    public static func checkSocketPath(_ path: String, fix: String) throws(UntrustedPathError) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard (status.st_mode & S_IFMT) == S_IFSOCK else {
            throw UntrustedPathError(path: path, problem: "exists and is not a socket", fix: fix)
        }
        guard status.st_uid == geteuid() else {
            throw UntrustedPathError(
                path: path, problem: "is a socket of uid \(status.st_uid), not of the daemon's user (uid \(geteuid()))",
                fix: fix)
        }
    }

    /// Every symbolic link on the way to `path` (itself included) must be root's.
    private static func checkLinks(in path: String, fix: String) throws(UntrustedPathError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            var status = stat()
            guard lstat(prefix, &status) == 0 else { return }
            if (status.st_mode & S_IFMT) == S_IFLNK && status.st_uid != 0 {
                throw UntrustedPathError(
                    path: prefix, problem: "is a symbolic link owned by uid \(status.st_uid)", fix: fix)
            }
        }
    }

    /// Every directory above `path` (canonical, no links): root's or the daemon's user's, and
    /// writable by nobody else unless sticky. Another user's directory above it, or one others
    /// may write, lets them rename what is below away and put their own in its place.
    private static func checkAncestors(of path: String, fix: String) throws(UntrustedPathError) {
        var prefix = ""
        var directories = ["/"]
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        for component in components.dropLast() {
            prefix += "/" + component
            directories.append(prefix)
        }
        for directory in directories {
            var status = stat()
            guard lstat(directory, &status) == 0 else {
                throw UntrustedPathError(path: directory, problem: "cannot be read (\(Errno.current))", fix: fix)
            }
            try checkDirectory(directory, status, fix: fix)
        }
    }

    private static func checkDirectory(_ path: String, _ status: stat, fix: String) throws(UntrustedPathError) {
        let owner = geteuid()
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            throw UntrustedPathError(path: path, problem: "is not a directory", fix: fix)
        }
        guard status.st_uid == 0 || status.st_uid == owner else {
            throw UntrustedPathError(
                path: path,
                problem: "is owned by uid \(status.st_uid), neither root nor the daemon's user (uid \(owner))",
                fix: fix)
        }
        if status.st_mode & 0o022 != 0 && status.st_mode & S_ISVTX == 0 {
            throw UntrustedPathError(
                path: path, problem: "is writable by other users (mode \(octal(status.st_mode & 0o7777)))", fix: fix)
        }
    }

    /// Each entry of the open directory `fd`, without following links.
    private static func checkEntries(of fd: Int32, path: String, owner: uid_t, fix: String)
        throws(UntrustedPathError)
    {
        let listing = dup(fd)
        guard listing >= 0, let directory = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            throw UntrustedPathError(path: path, problem: "cannot be listed (\(Errno.current))", fix: fix)
        }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            var status = stat()
            guard fstatat(fd, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let entryPath = path + "/" + name
            if (status.st_mode & S_IFMT) == S_IFLNK {
                throw UntrustedPathError(path: entryPath, problem: "is a symbolic link", fix: fix)
            }
            guard status.st_uid == owner else {
                throw UntrustedPathError(
                    path: entryPath,
                    problem: "is owned by uid \(status.st_uid), not by the daemon's user (uid \(owner))",
                    fix: fix)
            }
        }
    }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
