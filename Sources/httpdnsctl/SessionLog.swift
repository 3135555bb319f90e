import HTTPDNSSystem
import Synchronization

/// What `browser` says on standard error: warnings always, each sync step with `--verbose`
/// (with running counts of the writes to each side, which show that changes do not echo).
/// Cookie values never appear.
final class SessionLog: Sendable {
    /// The writes that are counted.
    enum Write: Int {
        /// `handleSetCookie` calls to the daemon.
        case handleSetCookie
        /// `Storage.setCookies` calls to the browser.
        case setCookies
    }

    let verbose: Bool
    private let counts = Mutex<[Int]>([0, 0])

    init(verbose: Bool) { self.verbose = verbose }

    func warning(_ message: String) { emit(message) }

    func debug(_ message: String) {
        if verbose { emit(message) }
    }

    func count(_ write: Write) {
        let now = counts.withLock { counts in
            counts[write.rawValue] += 1
            return counts
        }
        debug("writes: handleSetCookie=\(now[0]) setCookies=\(now[1])")
    }

    private func emit(_ message: String) {
        try? FileDescriptor.standardError.writeAll(Array("httpdnsctl browser: \(message)\n".utf8))
    }
}
