import HTTPDNSCore

/// Shorthands over `insert(host:parts:upstream:now:use:)`, which is how the daemon stores an
/// answer (all its families at once, each with its TTL).
extension DNSCache {
    /// Caches an answer whose families share one TTL.
    @discardableResult
    func insert(
        host: String, parts: [(family: IPFamily, addresses: [String])], ttl: Int, upstream: String?,
        now: MonotonicInstant, use: CacheUse = .nobody
    ) -> Int {
        insert(
            host: host, parts: parts.map { CachePart(family: $0.family, addresses: $0.addresses, ttl: ttl) },
            upstream: upstream, now: now, use: use)
    }

    /// Caches one family's answer; whether an entry is now cached for the key.
    @discardableResult
    func insert(
        host: String, family: IPFamily, addresses: [String], ttl: Int, upstream: String?, now: MonotonicInstant
    ) -> Bool {
        insert(host: host, parts: [(family, addresses)], ttl: ttl, upstream: upstream, now: now) == 1
    }

    /// Caches "this host has no address of this family" for `negativeTTL`, clamped like any TTL.
    @discardableResult
    func insertNegative(host: String, family: IPFamily, upstream: String? = nil, now: MonotonicInstant) -> Bool {
        insert(host: host, parts: [(family, [])], ttl: 0, upstream: upstream, now: now) == 1
    }
}
