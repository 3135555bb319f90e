import HTTPDNSSystem

/// What the store does with files around sqlite: a private (0600) database file, and moving a
/// damaged one aside.
enum StateFiles {
    /// The suffixes of sqlite's companion files (WAL, shared memory, rollback journal).
    static let companionSuffixes = ["-wal", "-shm", "-journal"]

    /// Cookies are login sessions: the database is 0600, and sqlite gives -wal and -shm the same mode.
    static func makePrivateFile(_ path: String) throws(SystemError) {
        try Files.createPrivateFile(path)
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
            try Files.rename(path + suffix, to: target + suffix)
        }
        return target
    }

    /// Unix seconds of the wall clock, for the name of a moved-aside file.
    static func unixTime() -> Int64 { WallClock.nowSeconds() }
}
