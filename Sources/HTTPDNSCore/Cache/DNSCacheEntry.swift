import HTTPDNSProtocol

/// One cached answer: the addresses of one host in one family, or the fact that it has none.
public struct DNSCacheEntry: Sendable, Equatable {
    /// The host name as the resolver validated it (lowercase, no trailing dot).
    public var host: String
    public var family: IPFamily
    /// Canonical address strings, in the order the upstream gave them. Empty for a negative entry.
    public var addresses: [String]
    /// Which upstream answered (its configured name), when known.
    public var upstream: String?
    /// When the answer stops being fresh.
    public var expiresAt: MonotonicInstant
    /// True when the upstream said the name has no address of this family (or does not exist).
    public var negative: Bool

    public init(
        host: String,
        family: IPFamily,
        addresses: [String],
        upstream: String?,
        expiresAt: MonotonicInstant,
        negative: Bool
    ) {
        self.host = host
        self.family = family
        self.addresses = addresses
        self.upstream = upstream
        self.expiresAt = expiresAt
        self.negative = negative
    }
}

/// What one family of a cached host holds.
enum FamilyLookup: Sendable, Equatable {
    /// A live answer with `ttlLeft` whole seconds to live (rounded up, so at least 1).
    case fresh(DNSCacheEntry, ttlLeft: Int)
    /// An expired answer still inside the serve-stale window (RFC 8767), returned only when the
    /// caller allowed stale answers. Negative entries are never served stale.
    case stale(DNSCacheEntry)
    /// Nothing usable.
    case miss
}

/// What `DNSCache.answer` found for every family one request asks for.
public enum CachedAnswer: Sendable, Equatable {
    /// Every family is cached and live; `ttlLeft` is the least whole seconds left (at least 1).
    /// The entries may all be negative: the name has no address of the families asked for.
    case fresh([DNSCacheEntry], ttlLeft: Int)
    /// Every family is cached but at least one only inside its serve-stale window (returned only
    /// when the caller allowed stale answers).
    case stale([DNSCacheEntry])
    /// Some family has nothing usable.
    case miss
}

/// A cache entry in a form that survives a restart: the expiry is wall-clock Unix seconds,
/// because the monotonic clock starts again at every boot.
public struct PersistedDNSEntry: Sendable, Equatable {
    public var host: String
    public var family: IPFamily
    public var addresses: [String]
    public var upstream: String?
    /// Unix seconds at which the answer stops being fresh.
    public var expiresAtUnix: Int64
    public var negative: Bool

    public init(
        host: String,
        family: IPFamily,
        addresses: [String],
        upstream: String?,
        expiresAtUnix: Int64,
        negative: Bool
    ) {
        self.host = host
        self.family = family
        self.addresses = addresses
        self.upstream = upstream
        self.expiresAtUnix = expiresAtUnix
        self.negative = negative
    }
}
