import HTTPDNSCore

/// What `DNSCache.lookup` found for one family.
public enum CacheLookup: Sendable, Equatable {
    /// A live answer with `ttlLeft` whole seconds to live (rounded up, so at least 1).
    case fresh(DNSCacheEntry, ttlLeft: Int)
    /// An expired answer still inside the serve-stale window, returned only when allowed.
    case stale(DNSCacheEntry)
    /// Nothing usable.
    case miss
}

/// Tests look at one family at a time; the daemon asks `answer` for every family of a request.
extension DNSCache {
    /// One family of `host`, without touching the counters (the daemon's own second look).
    public func lookup(host: String, family: IPFamily, now: MonotonicInstant, allowStale: Bool) -> CacheLookup {
        switch answer(host: host, families: [family], now: now, allowStale: allowStale, counted: false) {
        case .fresh(let entries, let ttlLeft): return .fresh(entries[0], ttlLeft: ttlLeft)
        case .stale(let entries): return .stale(entries[0])
        case .partial, .miss: return .miss
        }
    }
}
