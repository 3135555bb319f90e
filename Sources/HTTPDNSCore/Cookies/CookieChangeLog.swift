import HTTPDNSProtocol

/// The changes a jar made since they were last taken: what a store must apply to mirror it.
/// Last-access updates from retrievals are not changes (they ride along with the cookie's next
/// upsert).
struct CookieChangeLog {
    private var changes: [CookieChange] = []
    /// Which of `changes` only purged an expired cookie (positions in it).
    private var purges = Set<Int>()
    /// A cookie was set again exactly as stored (last-access aside): no change to write, but its
    /// answer must wait for the changes still being written.
    private var refreshedAsStored = false

    /// Where the log is now, to take what is recorded after it (`take(since:)`).
    struct Mark {
        fileprivate var count: Int
        fileprivate var refreshedAsStored: Bool
    }

    var mark: Mark { Mark(count: changes.count, refreshedAsStored: refreshedAsStored) }

    mutating func upsert(_ cookie: consuming Cookie) { changes.append(.upsert(cookie)) }

    /// A deletion; `purgingExpired` when it only removed an expired cookie.
    mutating func delete(_ key: CookieKey, purgingExpired: Bool = false) {
        if purgingExpired { purges.insert(changes.count) }
        changes.append(.delete(key))
    }

    mutating func noteRefreshedAsStored() { refreshedAsStored = true }

    /// Every change, oldest first, leaving the log empty.
    mutating func drain() -> CookieJarChanges {
        defer {
            changes.removeAll(keepingCapacity: true)
            purges.removeAll(keepingCapacity: true)
            refreshedAsStored = false
        }
        return CookieJarChanges(changes: changes, expiryPurges: purges, refreshedAsStored: refreshedAsStored)
    }

    /// The changes recorded since `mark`, taken out of the log; what was set again as stored since
    /// then is forgotten too (it is the caller's to wait for, not the next request's).
    mutating func take(since mark: Mark) -> [CookieChange] {
        refreshedAsStored = mark.refreshedAsStored
        let taken = Array(changes[mark.count...])
        changes.removeSubrange(mark.count...)
        purges = purges.filter { $0 < mark.count }
        return taken
    }
}
