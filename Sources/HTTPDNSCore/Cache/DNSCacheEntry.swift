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
    /// For a negative entry: the name does not exist at all (NXDOMAIN), rather than only without
    /// an address of this family (NODATA).
    public var noSuchName: Bool

    public init(
        host: String,
        family: IPFamily,
        addresses: [String],
        upstream: String?,
        expiresAt: MonotonicInstant,
        negative: Bool,
        noSuchName: Bool = false
    ) {
        self.host = host
        self.family = family
        self.addresses = addresses
        self.upstream = upstream
        self.expiresAt = expiresAt
        self.negative = negative
        self.noSuchName = noSuchName
    }
}

/// One family of one upstream answer, as `DNSCache.insert` stores it.
public struct CachePart: Sendable, Equatable {
    public var family: IPFamily
    /// Canonical address strings; empty for "no address of this family".
    public var addresses: [String]
    /// The upstream's TTL for this family, in seconds.
    public var ttl: Int
    /// With no address: the name does not exist at all (NXDOMAIN).
    public var noSuchName: Bool

    public init(family: IPFamily, addresses: [String], ttl: Int, noSuchName: Bool = false) {
        self.family = family
        self.addresses = addresses
        self.ttl = ttl
        self.noSuchName = noSuchName
    }

    /// The part of `answer` for `family`.
    public init(_ answer: UpstreamAnswer, family: IPFamily) {
        self.init(
            family: family, addresses: answer.nameExists ? answer.addresses(family).map(\.description) : [],
            ttl: answer.ttl(family), noSuchName: !answer.nameExists)
    }
}

/// Who used a cache entry while it was fresh: the uid whose answer it was or who was handed it
/// from the cache. Making room for a uid's answer evicts only entries that uid alone used (or
/// nobody did), never one another uid used within its TTL.
public enum CacheUse: Sendable, Equatable {
    /// Nobody yet: prefetched, restored, or from the fleet.
    case nobody
    /// One uid.
    case one(UInt32)
    /// More than one uid.
    case several

    /// The uid whose answer may evict that uid's own entries (nil: only nobody's).
    var evictor: UInt32? {
        if case .one(let uid) = self { return uid }
        return nil
    }

    /// `self` with `uid` added.
    public func adding(_ uid: UInt32) -> CacheUse {
        switch self {
        case .nobody: return .one(uid)
        case .one(let known): return known == uid ? self : .several
        case .several: return .several
        }
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
    /// Of two families, one is fresh (these entries) and `missing` has nothing usable: only it
    /// needs asking.
    case partial([DNSCacheEntry], missing: IPFamily)
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
    /// A negative entry for a name that does not exist (NXDOMAIN).
    public var noSuchName: Bool

    public init(
        host: String,
        family: IPFamily,
        addresses: [String],
        upstream: String?,
        expiresAtUnix: Int64,
        negative: Bool,
        noSuchName: Bool = false
    ) {
        self.host = host
        self.family = family
        self.addresses = addresses
        self.upstream = upstream
        self.expiresAtUnix = expiresAtUnix
        self.negative = negative
        self.noSuchName = noSuchName
    }
}
