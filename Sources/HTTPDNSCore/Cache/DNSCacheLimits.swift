/// The knobs of the cache policy, in seconds (DNS TTLs are whole seconds, RFC 1035 section 3.2.1).
public struct DNSCacheLimits: Sendable, Equatable {
    /// Floor applied to every TTL. Default 0: honour the zone owner's TTL (`MinTTL=`).
    public var minTTL: Int
    /// Ceiling applied to every TTL. Default 1 day (`MaxTTL=`): RFC 8767 section 4 suggests
    /// capping TTLs at 7 days; a shorter cap bounds how long a changed record goes unnoticed.
    /// Never above 2^31-1 (RFC 2181 section 8), also for `MaxTTL=infinity`.
    public var maxTTL: Int
    /// How long "no address" is remembered (`NegativeTTL=`). Default 30 s, as systemd-resolved
    /// caches a failed lookup; RFC 2308 section 5 allows more, but a name that starts to exist
    /// should be seen soon.
    public var negativeTTL: Int
    /// How long past expiry an answer may still be served stale (`MaxStale=`). Default 1 day,
    /// inside RFC 8767 section 5's suggested 1 to 3 days.
    public var maxStale: Int
    /// Hard cap on entries (`CacheSize=`). Default 4096, systemd-resolved's `CACHE_MAX`: RFC 1536
    /// leaves caches unbounded, which lets anyone who can make us resolve names exhaust memory.
    public var capacity: Int
    /// `DomainTTL=`: the bounds that replace `minTTL` and `maxTTL` for the names of some domains.
    public var domainTTLs: DomainTTLPolicy

    public init(
        minTTL: Int = 0,
        maxTTL: Int = 86_400,
        negativeTTL: Int = 30,
        maxStale: Int = 86_400,
        capacity: Int = 4096,
        domainTTLs: DomainTTLPolicy = DomainTTLPolicy()
    ) {
        precondition(capacity > 0, "a cache needs room for at least one entry")
        // Every TTL the daemon answers with is at most RFC 2181's 2^31-1 seconds, so `MaxTTL=infinity`
        // never puts a number on the wire that JSON readers (2^53-1 in JavaScript) cannot hold.
        let bounds = TTLBounds(minTTL: minTTL, maxTTL: maxTTL)
        self.minTTL = bounds.minTTL
        self.maxTTL = bounds.maxTTL
        self.negativeTTL = min(max(0, negativeTTL), UpstreamAnswer.maxTTL)
        self.maxStale = max(0, maxStale)
        self.capacity = capacity
        self.domainTTLs = domainTTLs
    }

    /// `ttl` clamped to [minTTL, maxTTL]; negative input counts as 0.
    public func clamp(ttl: Int) -> Int {
        TTLBounds(minTTL: minTTL, maxTTL: maxTTL).clamp(ttl: ttl)
    }

    /// The bounds of `host`'s TTLs: its domain's (`DomainTTL=`), else [minTTL, maxTTL].
    public func bounds(for host: String) -> TTLBounds {
        domainTTLs.bounds(for: host) ?? TTLBounds(minTTL: minTTL, maxTTL: maxTTL)
    }
}
