import HTTPDNSProtocol

/// The seam for fleet replication: a shared jar's cookies as another machine's copy holds them.
extension CookieJar {
    /// The stored cookie with `key`, if any (expired or not).
    public func cookie(for key: CookieKey) -> Cookie? {
        buckets.location(of: key, inBucket: buckets.bucketKey(key.domain)).map { buckets.cookie(at: $0) }
    }

    /// Stores a cookie that another machine's copy of a shared jar holds (fleet replication),
    /// as it is there (its creation time included), and enforces this jar's limits. Returns the
    /// changes for the store (the cookie, and any eviction the limits made) instead of
    /// recording them as this jar's own: they are not local changes to replicate again.
    public func applyRemote(_ cookie: Cookie, now: Int64) -> [CookieChange] {
        takingChanges { _ = store(cookie, now: now, keepingCreationTime: false) }
    }

    /// Removes the cookie with `key` because the fleet deleted it; returns the change for the
    /// store (none when the jar did not hold it).
    public func applyRemoteRemoval(_ key: CookieKey) -> [CookieChange] {
        takingChanges { evict(key, bucket: buckets.bucketKey(key.domain)) }
    }

    /// Runs `body` and takes the changes it recorded out of the log.
    private func takingChanges(_ body: () -> Void) -> [CookieChange] {
        let mark = changeLog.mark
        body()
        return changeLog.take(since: mark)
    }
}
