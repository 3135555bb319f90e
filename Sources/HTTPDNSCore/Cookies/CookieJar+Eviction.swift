import HTTPDNSProtocol

/// Limits on the jar's size (RFC 6265bis section 6.1 asks for at least 50 per domain and
/// 3000 in total; 180 per domain is what Chromium allows).
public struct CookieJarLimits: Sendable, Equatable {
    /// Cookies per registrable domain (or per host when it has none, such as an IP).
    public var maxPerDomain: Int
    /// Cookies in the whole jar.
    public var maxTotal: Int

    public init(maxPerDomain: Int = 180, maxTotal: Int = 3000) {
        self.maxPerDomain = maxPerDomain
        self.maxTotal = maxTotal
    }
}

/// Limits and eviction (RFC 6265bis 5.7, "remove excess cookies"), and purging expired cookies.
extension CookieJar {
    /// Brings `bucket` and the jar back within the limits, never evicting `keeping`.
    /// Returns false when that is impossible without evicting `keeping`.
    func enforceLimits(bucket: String, keeping: CookieKey?, now: Int64) -> Bool {
        if buckets.count(inBucket: bucket) > limits.maxPerDomain {
            if buckets.mayHoldExpired(at: now) {
                removeAll(inBucket: bucket, purgingExpired: true) { $0.isExpired(at: now) }
            }
            while buckets.count(inBucket: bucket) > limits.maxPerDomain {
                // Priority: non-secure cookies of the over-full domain, then any of them;
                // the least recently accessed first.
                guard let victim = leastRecentlyUsed(inBucket: bucket, excluding: keeping) else { return false }
                evict(victim, bucket: bucket)
            }
        }
        if buckets.count > limits.maxTotal {
            purgeExpired(now: now)
            while buckets.count > limits.maxTotal {
                guard let (victim, victimBucket) = buckets.leastRecentlyUsed(excluding: keeping) else { return false }
                evict(victim, bucket: victimBucket)
            }
        }
        return true
    }

    /// Removes the cookie with `key` from `bucket`, recording the deletion.
    func evict(_ key: CookieKey, bucket: String) {
        if buckets.remove(key, inBucket: bucket) != nil { changeLog.delete(key) }
    }

    /// The bucket's victim: a non-secure cookie when there is one, the least recently used first.
    private func leastRecentlyUsed(inBucket bucket: String, excluding: CookieKey?) -> CookieKey? {
        var best: CookieBuckets.StoredCookie?
        for stored in buckets.storedCookies(inBucket: bucket) where stored.cookie.key != excluding {
            guard let current = best else {
                best = stored
                continue
            }
            if current.cookie.secure != stored.cookie.secure {
                if current.cookie.secure { best = stored }
            } else if stored.accessOrder < current.accessOrder {
                best = stored
            }
        }
        return best?.cookie.key
    }

    /// Removes every expired cookie; returns how many. Looks only when one may have expired
    /// (`CookieBuckets.earliestExpiry`): a full jar purges before each eviction, and a scan each
    /// time made storing into it cost the jar's size per cookie.
    @discardableResult
    public func purgeExpired(now: Int64) -> Int {
        guard buckets.mayHoldExpired(at: now) else { return 0 }
        var removed = 0
        for bucket in Array(buckets.byBucket.keys) {
            removed += removeAll(inBucket: bucket, purgingExpired: true) { $0.isExpired(at: now) }
        }
        buckets.settleEarliestExpiry()
        return removed
    }
}
