import Glibc
import HTTPDNSCore
import HTTPDNSSystem

/// `/etc/subuid` as the daemon charges peers: read at start, and again when the file changes
/// (its inode, size or modification time, looked at most once a second of the loop's clock), so
/// the subordinate uids `adduser` or `usermod --add-subuids` gives a user count as that user's at
/// once. Only this file counts (not libsubid's NSS `subid:` sources); a missing or unreadable file
/// charges every uid to itself.
final class SubordinateIDFile {
    static let systemPath = "/etc/subuid"

    private let path: String
    private let now: () -> Int64
    private var ids = SubordinateIDs()
    private var signature: [Int] = []
    private var checkedAt: Int64?

    init(path: String = SubordinateIDFile.systemPath, now: @escaping () -> Int64) {
        self.path = path
        self.now = now
        refresh()
    }

    /// The uid whose bounds `uid` is charged to.
    func account(of uid: UInt32) -> UInt32 {
        let current = now()
        if let checkedAt, current - checkedAt < 1_000_000_000 {
            return ids.account(of: uid)
        }
        checkedAt = current
        refresh()
        return ids.account(of: uid)
    }

    private func refresh() {
        var status = stat()
        guard stat(path, &status) == 0 else {
            ids = SubordinateIDs()
            signature = []
            return
        }
        let current = [
            Int(status.st_ino), Int(status.st_size), status.st_mtim.tv_sec, status.st_mtim.tv_nsec,
        ]
        guard current != signature else { return }
        signature = current
        guard let bytes = try? Files.read(path, limit: 4 << 20) else {
            ids = SubordinateIDs()
            return
        }
        ids = SubordinateIDs(parsing: String(decoding: bytes, as: UTF8.self), uidOfName: UserAccounts.uid(named:))
    }
}

@available(*, unavailable)
extension SubordinateIDFile: Sendable {}
