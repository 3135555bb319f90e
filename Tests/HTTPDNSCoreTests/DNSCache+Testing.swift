import HTTPDNSCore

/// One-family shorthands over `insert(host:parts:ttl:upstream:now:)`, which is how the daemon
/// stores an answer (all its families at once).
extension DNSCache {
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
