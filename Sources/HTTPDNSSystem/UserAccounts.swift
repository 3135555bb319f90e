import Glibc

/// The system's user database (passwd, through NSS), for settings that name users.
public enum UserAccounts {
    /// The uid of the user called `name`, or nil when there is none (`getpwnam_r`).
    public static func uid(named name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        let rc = getpwnam_r(name, &entry, &buffer, buffer.count, &result)
        guard rc == 0, result != nil else { return nil }
        return entry.pw_uid
    }
}
