import HTTPDNSProtocol

/// What the browser's store and the daemon's jar last agreed on, and the diffs that bring one
/// side up to date with the other.
///
/// Each change is carried once: after the browser's change is written to the daemon, the
/// daemon's jar reads back as `agreed`, so its change event causes no write to the browser, and
/// the other way round. That is what keeps the two from echoing each other.
struct CookieMirror {
    /// What is known to be on both sides.
    private(set) var agreed: [CookieKey: BrowserCookie] = [:]
    /// Daemon cookies the browser would not take, as the daemon had them: not offered again
    /// until the daemon's version changes, and never read as deleted in the browser.
    private var refused: [CookieKey: BrowserCookie] = [:]
    /// Browser cookies the daemon would not store (its rules are its own): not written again
    /// until the browser's version changes, and never read as deleted in the daemon.
    private var refusedByDaemon: [CookieKey: BrowserCookie] = [:]

    /// What the daemon must learn from the browser's store.
    struct BrowserChanges: Equatable {
        var stored: [BrowserCookie] = []
        var deleted: [BrowserCookie] = []
        var isEmpty: Bool { stored.isEmpty && deleted.isEmpty }
    }

    /// What the browser must learn from the daemon's jar.
    struct DaemonChanges: Equatable {
        var stored: [BrowserCookie] = []
        var deleted: [BrowserCookie] = []
        var isEmpty: Bool { stored.isEmpty && deleted.isEmpty }
    }

    /// The browser's store as it is now, against what was agreed: its new and changed cookies,
    /// and the agreed ones it no longer has. They count as agreed from here on.
    mutating func browserChanged(_ store: [BrowserCookie]) -> BrowserChanges {
        var changes = BrowserChanges()
        var present = Set<CookieKey>()
        for cookie in store {
            present.insert(cookie.key)
            if let known = agreed[cookie.key], known.matches(cookie) { continue }
            if let refusedVersion = refusedByDaemon[cookie.key], refusedVersion.matches(cookie) { continue }
            changes.stored.append(cookie)
            agreed[cookie.key] = cookie
            refused[cookie.key] = nil
            refusedByDaemon[cookie.key] = nil
        }
        for (key, cookie) in agreed where !present.contains(key) {
            changes.deleted.append(cookie)
            agreed[key] = nil
        }
        for key in refusedByDaemon.keys where !present.contains(key) { refusedByDaemon[key] = nil }
        return changes
    }

    /// The daemon's jar as it is now, against what was agreed: what the browser must store and
    /// delete. Deletions count as agreed at once; stored cookies once `browserTook` says so.
    mutating func daemonChanged(_ jar: [BrowserCookie]) -> DaemonChanges {
        var changes = DaemonChanges()
        var present = Set<CookieKey>()
        for cookie in jar {
            present.insert(cookie.key)
            if let known = agreed[cookie.key], known.matches(cookie) { continue }
            if let refusedVersion = refused[cookie.key], refusedVersion.matches(cookie) { continue }
            changes.stored.append(cookie)
        }
        for (key, cookie) in agreed where !present.contains(key) {
            changes.deleted.append(cookie)
            agreed[key] = nil
        }
        for key in refused.keys where !present.contains(key) { refused[key] = nil }
        return changes
    }

    /// After `Storage.setCookies` of `offered`: `store` is the browser's store read back. A
    /// cookie it holds is agreed (as the daemon has it: a difference shows at the next
    /// `browserChanged`); one it lacks was refused.
    mutating func browserTook(_ offered: [BrowserCookie], store: [BrowserCookie]) {
        let held = Set(store.map(\.key))
        for cookie in offered {
            if held.contains(cookie.key) {
                agreed[cookie.key] = cookie
                refused[cookie.key] = nil
            } else {
                refused[cookie.key] = cookie
                agreed[cookie.key] = nil
            }
        }
    }

    /// The daemon refused `cookie` from the browser: it stays the browser's alone.
    mutating func daemonRefused(_ cookie: BrowserCookie) {
        agreed[cookie.key] = nil
        refusedByDaemon[cookie.key] = cookie
    }
}
