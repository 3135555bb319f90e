import Glibc
import HTTPDNSSystem

/// The file operations the store needs around sqlite: a private (0600) database file, and moving a
/// damaged one aside.
///
/// These belong in HTTPDNSSystem's `Files` (raw syscalls live there); they are here until it grows them.
enum StateFiles {
    /// The suffixes of sqlite's companion files (WAL, shared memory, rollback journal).
    static let companionSuffixes = ["-wal", "-shm", "-journal"]

    /// Creates `path` if missing and makes it mode 0600: cookies are login sessions. sqlite creates the
    /// -wal and -shm files with the database file's mode, so they follow.
    static func makePrivateFile(_ path: String) throws(SystemError) {
        let fd = FileDescriptor(
            rawValue: try syscall("open \(path)") { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) })
        defer { fd.close() }
        _ = try syscall("fchmod \(path)") { fchmod(fd.rawValue, 0o600) }
    }

    /// Renames `path` and its companion files to `<path>.corrupt-<now>` (plus the suffix), adding a
    /// counter if that name is taken. Returns the new name of the database file.
    static func moveAside(_ path: String, now: Int64) throws(SystemError) -> String {
        var target = "\(path).corrupt-\(now)"
        var attempt = 1
        while Files.exists(target) {
            target = "\(path).corrupt-\(now).\(attempt)"
            attempt += 1
        }
        for suffix in [""] + companionSuffixes where Files.exists(path + suffix) {
            _ = try syscall("rename \(path + suffix)") { rename(path + suffix, target + suffix) }
        }
        return target
    }

    /// Unix seconds of the wall clock, for the name of a moved-aside file.
    static func unixTime() -> Int64 { Int64(time(nil)) }
}
